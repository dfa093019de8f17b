package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/library"
)

// pagesOf is the library rows, counting the index pages read of one
// principal's library (each sweep of a deletion or a closing reads them).
type pagesOf struct {
	library.EntryStore
	principal string
	pages     int
}

func (p *pagesOf) IndexPage(ctx context.Context, principalID, after string, limit int) ([]library.Entry, error) {
	if principalID == p.principal {
		p.pages++
	}
	return p.EntryStore.IndexPage(ctx, principalID, after, limit)
}

// TestRepeatsAskedBeforeASweepBeganAreDoneByIt (attackers are users
// too): a repeat of a finished closing (by whoever closed the group, or
// an admin) or of a finished deletion (an admin's) writes an entry of its
// own, and the job worker sweeps the steps again. Each client address is
// limited on its own, so a session (a stolen one too) on many addresses
// had the worker sweep the same group or account once a request. A
// repeat asked before a sweep the same pass ran to its end began, by any
// process's clock (domain.ClockSkew), is done by it: its entry is ended,
// nothing swept again. One asked since is swept.
func TestRepeatsAskedBeforeASweepBeganAreDoneByIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, op := range []struct {
		name    string
		subject func(c *closeWorld) string
		// repeat asks the finished operation again, as the admin.
		repeat func(c *closeWorld) error
		// inProgress counts the operation's entries left in its index.
		inProgress func(c *closeWorld) int
	}{
		{"the closing of a group", func(c *closeWorld) string { return c.group },
			func(c *closeWorld) error {
				_, err := c.life.CloseGroup(ctx, as(c.admin), c.group, accounts.Proof{})
				return err
			},
			func(c *closeWorld) int { return countEntries(t, c.store.Closings().InProgress) }},
		{"the deletion of an account", func(c *closeWorld) string { return c.friend.ID },
			func(c *closeWorld) error {
				_, err := c.life.DeleteUser(ctx, as(c.admin), c.friend.ID, accounts.Proof{})
				return err
			},
			func(c *closeWorld) int { return countEntries(t, c.store.Deletions().InProgress) }},
	} {
		c := newCloseWorld(t)
		stores := c.store.Contents()
		pages := &pagesOf{EntryStore: stores.Library, principal: op.subject(c)}
		stores.Library = pages
		lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: c.store.Now, Background: atOnce},
			c.svc, c.store.Users(), c.grp, stores, nopLog{})
		c.life = newLifecycle(c.world, c.grp, lib)
		if err := op.repeat(c); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		// pass runs the worker's pass after the repeats asked a while
		// before it, and answers the pages its sweeps read; no entry may
		// be left.
		pass := func(repeats int) int {
			t.Helper()
			for range repeats {
				if err := op.repeat(c); err != nil {
					t.Fatalf("%s, a repeat: %v", op.name, err)
				}
			}
			c.store.Advance(domain.ClockSkew + time.Second)
			pages.pages = 0
			if _, err := c.life.WorkJobs(ctx); err != nil {
				t.Fatalf("%s, %d repeats: the worker's pass: %v", op.name, repeats, err)
			}
			if n := op.inProgress(c); n != 0 {
				t.Errorf("%s, %d repeats: %d entries left in progress after the pass", op.name, repeats, n)
			}
			return pages.pages
		}
		pass(0)
		one := pass(1)
		if one == 0 {
			t.Fatalf("%s: a repeat's sweep read no page of the library", op.name)
		}
		if six := pass(6); six != one {
			t.Errorf("%s: six repeats asked a while before the pass read %d pages of the library, one sweep %d", op.name, six, one)
		}
	}
}

// countEntries counts the entries an index of operations in progress
// holds.
func countEntries[E any](t *testing.T, inProgress func(context.Context, func(E, time.Time) error) error) int {
	t.Helper()
	n := 0
	if err := inProgress(context.Background(), func(E, time.Time) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}
