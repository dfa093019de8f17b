//go:build integration

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain/library"
	"shelf/repository"
)

// TestShutdownDuringALargeFanoutLosesNothing: an item shared with 2 000
// principals is renamed; its fan-out goes on in the background pool. The
// process shuts down part-way (Close with a short budget, as serve does
// on SIGTERM): some libraries are behind, the mark is still there. The
// next process's outbox worker brings every library to the new name.
func TestShutdownDuringALargeFanoutLosesNothing(t *testing.T) {
	t.Parallel()
	// Generous timeouts: the node has just taken 2 000 writes beside the
	// package's other tests, and under -race the rename's statements can
	// outlast the default 2 s attempts (a 503). A 503's outcome is
	// unknown, so it cannot be retried here: whether its fan-out is in the
	// pool is what the test goes on to rely on. Timeouts are not its
	// subject.
	env := map[string]string{"SHELF_FANOUT_SYNC_LIMIT": "0", "SHELF_CASSANDRA_TIMEOUT": "6s", "SHELF_REQUEST_TIMEOUT": "30s", "SHELF_HTTP_WRITE_TIMEOUT": "40s"}
	m := newModerators(t, env)
	_, ownerAPI := m.member(t)
	c := createContent(t, ownerAPI, "before", "public")
	ctx := context.Background()
	const n = 2000
	members := repository.NewContentMembers(m.app.DB)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs <- members.Put(ctx, c.ID, library.Member{PrincipalID: fmt.Sprintf("u_shutdown%04d", i), Role: library.RoleViewer}, 1)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// The fan-out writes 300 libraries, then waits (a slow cluster) until
	// the shutdown has given up on it.
	var written atomic.Int32
	gate := make(chan struct{})
	m.app.Contents.Hooks.BeforeMember = func(string, string) error {
		if written.Add(1) > 300 {
			<-gate
		}
		return nil
	}
	if r := ownerAPI.Send(http.MethodPatch, "/v1/content/"+c.ID, map[string]string{"name": "after"}); r.StatusCode != http.StatusOK {
		t.Fatalf("rename: %d %s", r.StatusCode, r.Body)
	}
	for deadline := time.Now().Add(10 * time.Second); written.Load() <= 300; {
		if time.Now().After(deadline) {
			t.Fatalf("the background fan-out wrote %d libraries in 10 s", written.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if left := m.app.Contents.Close(stopCtx); left != 1 {
		t.Fatalf("Close left %d items to the outbox, want 1", left)
	}
	close(gate) // the stopped writers return; their context is cancelled

	libs := repository.NewLibraries(m.app.DB)
	behind := func() int {
		count := 0
		for i := range n {
			idx, err := libs.Index(ctx, fmt.Sprintf("u_shutdown%04d", i), []string{c.ID})
			if err != nil {
				t.Fatal(err)
			}
			if idx[c.ID].Name != "after" {
				count++
			}
		}
		return count
	}
	if b := behind(); b == 0 || b == n {
		t.Fatalf("%d of %d libraries behind after the shutdown: want some, not all (the fan-out stopped part-way)", b, n)
	}

	// The next process, on the same keyspace.
	next, _ := newTestApp(t, m.db, env)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := next.Contents.DrainOutbox(ctx, 0, 100); err != nil {
			t.Fatal(err)
		}
		b := behind()
		if b == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d libraries still behind after the next process's outbox worker ran", b)
		}
	}
}
