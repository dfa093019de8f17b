package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/tests/memstore"
)

// resentGroups sends a creation's insert again when its answer was lost
// and the row reads back absent, as the repository's executor does
// (repository/lwt.go): the first attempt, held at a node, may still land.
type resentGroups struct{ groups.Store }

func (s resentGroups) Create(ctx context.Context, gr groups.Group, lease time.Duration) (string, error) {
	return resent(ctx, gr, lease, s.Store.Create, func(ctx context.Context) error {
		_, err := s.Store.GetSerial(ctx, gr.ID)
		return err
	})
}

// resent is create of row, sent again once when its answer was lost and
// read (a SERIAL read of the row) finds none, as the repository's
// executor does.
func resent[R any](ctx context.Context, row R, lease time.Duration, create func(context.Context, R, time.Duration) (string, error),
	read func(context.Context) error) (string, error) {
	tag, err := create(ctx, row, lease)
	if !errors.Is(err, domain.ErrOutcomeUnknown) {
		return tag, err
	}
	if rerr := read(ctx); !errors.Is(rerr, domain.ErrNotFound) {
		return "", err
	}
	return create(ctx, row, lease)
}

// TestALateFirstInsertOfAResentCreationIsNeverActivated: a group's
// creation sends its pending row's insert, loses the answer (the attempt
// held at a node) and sends it again, which applies. The creation then
// stalls past its lease after committing its name: its row expires, and
// the jobs' worker, finding no group, ends the creation's entry. The first
// insert lands now, writing the pending row again, just before the
// stalled activation, and the creation's process dies once activated. An
// activation that takes any pending row makes the group active with its
// creator's membership pending and no entry left for the worker: the
// membership waits for a reader of the group
// (docs/design/groups.md#interrupted-changes: "a pending change never
// waits for a user"). The activation must take only the row its own
// attempt wrote; the late one's is discarded or expires, and the name is
// free again.
func TestALateFirstInsertOfAResentCreationIsNeverActivated(t *testing.T) {
	t.Parallel()
	const name = "first insert landing late before the stalled activation"
	w := newWorld()
	if err := w.signup("owner", "owner@example.org"); err != nil {
		t.Fatal(err)
	}
	owner := w.created[0]
	ctx := context.Background()
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, TurnWait: time.Millisecond, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), resentGroups{groupRows(w.store)}, w.store.GroupMembers(), nopLog{})
	faultNamed(w.store, "groups.create", 0, memstore.LandLate)
	grp.Hooks.AfterStep = func(op, step string) error {
		switch {
		case op != "create":
		case step == "commit":
			w.store.Advance(staleChangeAge + time.Minute)
			if n, err := grp.FinishInterruptedChanges(ctx, staleChangeAge); err != nil || n != 1 {
				t.Errorf("%s: the worker's pass while the creation stalls: %d entries finished, %v; want its entry", name, n, err)
			}
			w.store.Land()
		case step == "activate":
			return errors.New("crashed (test hook)")
		}
		return nil
	}
	if _, err := grp.CreateGroup(ctx, as(owner), groups.CreateInput{Name: "club"}); err == nil {
		t.Fatalf("%s: the creation answered success", name)
	}
	grp.Hooks.AfterStep = nil
	recovered(w.store)
	for range 2 {
		w.store.Advance(staleChangeAge + time.Minute)
		if _, err := grp.FinishInterruptedChanges(ctx, staleChangeAge); err != nil {
			t.Errorf("%s: the worker's pass after the creation: %v", name, err)
		}
	}
	snap := w.store.GroupSnapshot()
	for _, gr := range snap.Groups {
		if gr.Pending != nil {
			t.Errorf("%s: group %s (%s) keeps its creator's membership pending after the worker's passes: %+v", name, gr.ID, gr.Status, *gr.Pending)
		}
	}
	if _, err := grp.CreateGroup(ctx, as(owner), groups.CreateInput{Name: "club"}); err != nil {
		t.Errorf("%s: the name is not free again: %v", name, err)
	}
}
