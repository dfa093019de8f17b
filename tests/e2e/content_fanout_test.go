//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain"
)

// TestPartialFanoutIsCompletedByTheOutbox stops the fan-out of an update
// after k of n member libraries, as a crash would: the change still
// answers (it is durable with its outbox entry), the libraries behind hide
// the item meanwhile, and the outbox worker completes it; every library
// ends on the final version (L4).
func TestPartialFanoutIsCompletedByTheOutbox(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	_, ownerAPI := m.member(t)
	c := createContent(t, ownerAPI, "partial", "loggedin")
	var friends []userBody
	for i := 0; i < 8; i++ {
		f, _ := m.member(t)
		share(t, ownerAPI, c.ID, f.ID, "viewer")
		friends = append(friends, f)
	}
	for _, k := range []int{0, 3, 8} {
		var written atomic.Int32
		m.app.Contents.Hooks.BeforeMember = func(contentID, principalID string) error {
			if written.Add(1) > int32(k) {
				return errors.New("stopped here (test hook)")
			}
			return nil
		}
		name := fmt.Sprint("after ", k)
		r := ownerAPI.Send(http.MethodPatch, "/v1/content/"+c.ID, map[string]string{"name": name})
		m.app.Contents.Hooks.BeforeMember = nil
		if r.StatusCode != http.StatusOK {
			t.Fatalf("update with the fan-out stopped after %d: %d %s", k, r.StatusCode, r.Body)
		}
		behind := 0
		for _, f := range friends {
			// A library the fan-out did not reach hides the item until it
			// does: it never shows the old name.
			switch lib := libraryOf(t, m.admin, "/v1/users/"+f.ID+"/library", 10); {
			case len(lib) == 0:
				behind++
			case len(lib) != 1 || lib[0].Name != name:
				t.Fatalf("k=%d: %s's library %+v", k, f.ID, lib)
			}
		}
		if k < 8 && behind == 0 {
			t.Fatalf("k=%d: the hook did not stop the fan-out", k)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := m.app.Contents.DrainOutbox(context.Background(), 0, 100); err != nil {
				t.Fatal(err)
			}
			behind = 0
			for _, f := range friends {
				lib := libraryOf(t, m.admin, "/v1/users/"+f.ID+"/library", 10)
				if len(lib) != 1 || lib[0].Name != name {
					behind++
				}
			}
			if behind == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("k=%d: %d libraries still behind after the outbox ran", k, behind)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestFanoutToTenThousandMembers: an update of an item shared with 10 000
// principals reaches every one of their libraries (no cap; in the
// background, since it is over the sync limit).
func TestFanoutToTenThousandMembers(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	_, ownerAPI := m.member(t)
	c := createContent(t, ownerAPI, "for everyone", "public")
	ctx := context.Background()
	const n = 10_000
	principals := make([]string, n)
	for i := range principals {
		principals[i] = domain.NewID(domain.UserIDPrefix)
	}
	// Shares written straight into the source of truth at the item's
	// version 1 (10 000 signups would take minutes); the update below then
	// fans out to all of them.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, p := range principals {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := m.db.Session.ContextQuery(ctx, "INSERT INTO content_members (content_id, principal_id, role) VALUES (?, ?, 'viewer') USING TIMESTAMP 1", nil).
				Bind(c.ID, p).ExecRelease(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// The counts as the shares would have left them, and past its lean
	// rows as the shares would have taken it (its creator's row, written
	// lean, is replaced by the update's fan-out).
	if err := m.db.Session.ContextQuery(ctx, "UPDATE content SET members = ?, lean = false WHERE id = ? IF version = 1", nil).Bind(n+1, c.ID).ExecRelease(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := ownerAPI.Send(http.MethodPatch, "/v1/content/"+c.ID, map[string]string{"name": "for everyone, updated"})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("update: %d %s", r.StatusCode, r.Body)
	}
	var updated contentBody
	r.JSON(t, &updated)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		behind := countBehind(t, m, principals, c.ID, updated.Name)
		if behind == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d libraries still behind", behind, n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("10 000 member libraries updated %.1fs after the change", time.Since(start).Seconds())
}

// countBehind counts principals whose library index entry or public row
// does not show name yet.
func countBehind(t *testing.T, m *moderators, principals []string, contentID, name string) int {
	t.Helper()
	var behind atomic.Int32
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, p := range principals {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var got []string
			err := m.db.Session.ContextQuery(context.Background(), "SELECT name FROM library_by_principal WHERE principal_id = ? AND bucket = 'public'", nil).
				Bind(p).SelectRelease(&got)
			if err != nil || len(got) != 1 || got[0] != name {
				behind.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(behind.Load())
}
