package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// resentUsers sends a signup's insert again when its answer was lost and
// the row reads back absent, as the repository's executor does
// (repository/lwt.go): the first attempt, held at a node, may still land.
type resentUsers struct{ accounts.UserStore }

func (s resentUsers) Create(ctx context.Context, u domain.User, lease time.Duration) (string, error) {
	return resent(ctx, u, lease, s.UserStore.Create, func(ctx context.Context) error {
		_, err := s.UserStore.GetSerial(ctx, u.ID)
		return err
	})
}

// TestALateFirstInsertOfAResentSignupIsNeverActivated (U1): ann's signup
// sends its pending row's insert, loses the answer (the attempt held at
// a node) and sends it again, which applies. The signup then stalls past
// its lease after committing its claims: its row expires, so the claims
// name an owner with no row, and a second signup of "ann" takes them
// over and answers 201. The first insert lands now, writing the first
// pending row again, just before the stalled activation. An activation
// that takes any pending row made a second active account named ann.
// It must take only the row its own attempt wrote: the first signup
// answers that it expired, and one account holds the name.
func TestALateFirstInsertOfAResentSignupIsNeverActivated(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.rows = resentUsers{accountRows(w.store)}
	w.svc = accounts.New(w.cfg, w.store.Claims(), w.rows, w.store.Sessions(), plainHasher{}, nopLog{})
	faultNamed(w.store, "users.create", 0, memstore.LandLate)
	var second error
	w.svc.Hooks.AfterCommit = func() error {
		w.svc.Hooks.AfterCommit = nil
		w.store.Advance(time.Hour)
		recovered(w.store)
		second = w.signup("ann", "ann2@example.org")
		w.store.Land()
		return nil
	}
	first := w.signup("ann", "ann@example.org")
	if second != nil {
		t.Fatalf("the second signup of ann, once the first's row expired, answered %v", second)
	}
	active := 0
	for _, u := range w.created {
		if got, err := w.rows.GetSerial(context.Background(), u.ID); err == nil && got.Status == domain.StatusActive {
			active++
		}
	}
	if active != 1 {
		t.Fatalf("U1: %d active accounts named ann (the first signup answered %v); want one", active, first)
	}
	if first == nil {
		t.Fatalf("the first signup answered success, though its row expired and ann is the second's")
	}
}
