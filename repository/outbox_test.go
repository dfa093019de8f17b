//go:build integration

package repository_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/repository"
	"shelf/tests/testkit"
)

// marksOf lists the pending marks of one item (the package keyspace is
// shared with other tests).
func marksOf(t *testing.T, o *repository.Outbox, id string) []string {
	t.Helper()
	pending, err := o.Pending(context.Background(), time.Now().Add(24*time.Hour), 100000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pending {
		if p.ContentID == id {
			out = append(out, p.Marker)
		}
	}
	return out
}

// TestOutboxMarksAreTheirOwn: each mark is a record of its own, deleted by
// its key. An instance whose clock is 90 s ahead finishing its change
// does not erase another instance's later mark, nor does any Done erase
// an earlier one; an attempt of a mark that lands after its Done stays
// deleted. Before, the item had one outbox row and Done deleted it at the
// marker's wall-clock time: whatever was marked "before" that, by any
// clock, was gone (L3, L4; docs/design/libraries.md#queues).
func TestOutboxMarksAreTheirOwn(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	now := repository.NewOutbox(db)
	ahead := now.WithClock(func() time.Time { return time.Now().Add(90 * time.Second) })
	ctx := context.Background()
	id := key("c_outbox")

	markOf := func(o *repository.Outbox) string {
		t.Helper()
		m, err := o.Mark(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return m.Marker
	}
	first, skewed, last := markOf(now), markOf(ahead), markOf(now)
	if got := marksOf(t, now, id); len(got) != 3 {
		t.Fatalf("three marks, listed: %v", got)
	}
	if err := ahead.Done(ctx, id, skewed); err != nil {
		t.Fatal(err)
	}
	got := marksOf(t, now, id)
	if len(got) != 2 || !slices.Contains(got, first) || !slices.Contains(got, last) {
		t.Fatalf("after the skewed instance's Done, left %v, want %s and %s", got, first, last)
	}
	if err := now.Done(ctx, id, last); err != nil {
		t.Fatal(err)
	}
	if got := marksOf(t, now, id); len(got) != 1 || got[0] != first {
		t.Fatalf("after the last mark's Done, left %v, want only the first", got)
	}

	// An attempt of the first mark held in a node's queue lands after its
	// Done: the same key at the same timestamp, shadowed by the delete.
	if err := now.Done(ctx, id, first); err != nil {
		t.Fatal(err)
	}
	mark, err := gocql.ParseUUID(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Session.Query(`INSERT INTO content_mark_queue (bucket, shard, mark, content_id) VALUES (?, ?, ?, ?) USING TIMESTAMP ?`, nil).
		Bind(now.OutboxBucket(mark.Time()), repository.OutboxShard(id), mark, id, mark.Time().UnixMicro()).ExecRelease(); err != nil {
		t.Fatal(err)
	}
	if got := marksOf(t, now, id); len(got) != 0 {
		t.Fatalf("a mark landing after its Done is back: %v", got)
	}
}
