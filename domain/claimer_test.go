package domain

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// memClaims is a ClaimStore in memory that follows the contract of the
// Cassandra one: every write is a compare-and-set of one row.
type memClaims struct {
	mu   sync.Mutex
	rows map[string]Claim
}

func newMemClaims() *memClaims { return &memClaims{rows: map[string]Claim{}} }

func (m *memClaims) id(kind ClaimKind, key string) string { return string(kind) + "/" + key }

func (m *memClaims) Claim(_ context.Context, kind ClaimKind, key, owner, op string, base int, _ time.Duration) (Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.rows[m.id(kind, key)]; ok {
		return c, nil
	}
	c := Claim{Kind: kind, Key: key, Owner: owner, Op: op, State: ClaimPending, BaseVersion: base}
	m.rows[m.id(kind, key)] = c
	return c, nil
}

func (m *memClaims) Commit(_ context.Context, kind ClaimKind, key, owner, op string, _ int) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.rows[m.id(kind, key)]
	if !ok || c.Owner != owner || c.Op != op {
		return false, nil
	}
	c.State = ClaimCommitted
	m.rows[m.id(kind, key)] = c
	return true, nil
}

func (m *memClaims) Release(_ context.Context, kind ClaimKind, key, owner, op string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.rows[m.id(kind, key)]; ok && c.Owner == owner && c.Op == op {
		delete(m.rows, m.id(kind, key))
	}
	return nil
}

func (m *memClaims) Takeover(_ context.Context, kind ClaimKind, key string, dead Claim, owner, op string, base int, _ time.Duration) (bool, error) {
	return m.move(kind, key, dead, Claim{Kind: kind, Key: key, Owner: owner, Op: op, State: ClaimPending, BaseVersion: base})
}

func (m *memClaims) Adopt(_ context.Context, kind ClaimKind, key string, old Claim, op string, base int) (bool, error) {
	return m.move(kind, key, old, Claim{Kind: kind, Key: key, Owner: old.Owner, Op: op, State: ClaimCommitted, BaseVersion: base})
}

func (m *memClaims) move(kind ClaimKind, key string, from, to Claim) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.rows[m.id(kind, key)]
	if !ok || c.Owner != from.Owner || c.Op != from.Op || c.State != ClaimCommitted {
		return false, nil
	}
	m.rows[m.id(kind, key)] = to
	return true, nil
}

func (m *memClaims) Lookup(_ context.Context, kind ClaimKind, key string) (Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.rows[m.id(kind, key)]
	if !ok {
		return Claim{}, ErrNotFound
	}
	return c, nil
}

// memHolders says which owners exist, which keys they hold and their
// versions.
type memHolders struct {
	mu       sync.Mutex
	keys     map[string]map[string]bool // owner -> keys held; absent owner: gone
	versions map[string]int
}

func (h *memHolders) Holder(_ context.Context, _ ClaimKind, key, owner string) (bool, bool, int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys, ok := h.keys[owner]
	return ok, keys[key], h.versions[owner], nil
}

type nopLogger struct{}

func (nopLogger) Warn(context.Context, string, ...string) {}

func userKey(key string) []Key { return []Key{{Kind: KindUsername, Key: key, Field: "username"}} }

func TestClaimerOneWinnerPerKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := 0; round < 50; round++ {
		c := NewClaimer(newMemClaims(), time.Second, nopLogger{})
		holders := &memHolders{keys: map[string]map[string]bool{}}
		const claimants = 16
		won := make([]bool, claimants)
		var wg sync.WaitGroup
		for i := 0; i < claimants; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("u%d", i)
				held, conflict, err := c.AcquireAll(ctx, userKey("alice"), owner, owner, 0, holders)
				if err != nil {
					t.Error(err)
				}
				won[i] = len(held) == 1 && conflict == nil
				if !won[i] && !errors.Is(conflict, ErrConflict) {
					t.Errorf("claimant %d lost without a conflict: %v", i, conflict)
				}
			}()
		}
		wg.Wait()
		n := 0
		for _, w := range won {
			if w {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d claimants hold one key", round, n)
		}
	}
}

func TestClaimerOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	claims := newMemClaims()
	c := NewClaimer(claims, time.Second, nopLogger{})
	holders := &memHolders{keys: map[string]map[string]bool{"live": {"taken": true, "mine": false}, "me": {"mine": true}}}
	_, _ = claims.Claim(ctx, KindUsername, "taken", "live", "live", 0, 0)
	_, _ = claims.Commit(ctx, KindUsername, "taken", "live", "live", 0)
	_, _ = claims.Claim(ctx, KindUsername, "orphan", "dead", "dead", 0, 0)
	_, _ = claims.Commit(ctx, KindUsername, "orphan", "dead", "dead", 0)
	_, _ = claims.Claim(ctx, KindUsername, "inflight", "me", "op1", 0, 0)
	_, _ = claims.Claim(ctx, KindUsername, "mine", "me", "signup", 0, 0)
	_, _ = claims.Commit(ctx, KindUsername, "mine", "me", "signup", 0)

	held, conflict, err := c.AcquireAll(ctx, userKey("taken"), "me", "op2", 1, holders)
	var de *Error
	if err != nil || len(held) != 0 || !errors.As(conflict, &de) || len(de.Fields) != 1 || de.Fields[0].Code != "taken" {
		t.Fatalf("a live holder's key: held %v, conflict %v, err %v; want a 409 naming username", held, conflict, err)
	}
	held, conflict, err = c.AcquireAll(ctx, userKey("orphan"), "me", "op2", 1, holders)
	if err != nil || conflict != nil || len(held) != 1 {
		t.Fatalf("a dead holder's committed key is taken over: held %v, conflict %v, err %v", held, conflict, err)
	}
	if cl, _ := claims.Lookup(ctx, KindUsername, "orphan"); cl.Owner != "me" || cl.Op != "op2" || cl.State != ClaimPending {
		t.Fatalf("after takeover: %+v", cl)
	}
	if _, conflict, _ = c.AcquireAll(ctx, userKey("inflight"), "me", "op2", 1, holders); conflict != ErrBusy {
		t.Fatalf("a key another operation of the same owner holds: %v, want ErrBusy", conflict)
	}
	held, conflict, err = c.AcquireAll(ctx, userKey("mine"), "me", "op2", 1, holders)
	if err != nil || conflict != nil || len(held) != 0 {
		t.Fatalf("a key the owner already has: held %v, conflict %v, err %v; want nothing to claim", held, conflict, err)
	}

	// U6: releases touch only their own (owner, op).
	c.ReleaseAll(ctx, userKey("taken"), "me", "op2")
	c.ReleaseOld(ctx, userKey("taken"), "me", 2)
	if cl, err := claims.Lookup(ctx, KindUsername, "taken"); err != nil || cl.Owner != "live" {
		t.Fatalf("someone else's claim was touched: %+v %v", cl, err)
	}
	// A claim of an operation that read the owner at or after the
	// version the releasing change wrote is a later change's (back to the
	// key): it stays.
	_, _ = claims.Claim(ctx, KindUsername, "back", "me", "op3", 2, 0)
	_, _ = claims.Commit(ctx, KindUsername, "back", "me", "op3", 2)
	c.ReleaseOld(ctx, userKey("back"), "me", 2)
	if cl, err := claims.Lookup(ctx, KindUsername, "back"); err != nil || cl.Op != "op3" {
		t.Fatalf("a later change's claim was released: %+v %v", cl, err)
	}
	c.ReleaseOld(ctx, userKey("mine"), "me", 2)
	if _, err := claims.Lookup(ctx, KindUsername, "mine"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the owner's old committed claim stays: %v", err)
	}
}

// TestCreationUndoesOnlyWhatDidNotHappen runs the creation protocol with
// each way its activation can end.
func TestCreationUndoesOnlyWhatDidNotHappen(t *testing.T) {
	t.Parallel()
	expired := errors.New("expired")
	unknown := fmt.Errorf("users.activate: %w: %w", ErrOutcomeUnknown, ErrUnavailable)
	for _, tc := range []struct {
		name        string
		activated   bool
		activateErr error
		want        error
		kept        bool // claims and row stay
	}{
		{"activated", true, nil, nil, true},
		{"lease ran out", false, nil, expired, false},
		{"outcome unknown", false, unknown, unknown, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			claims := newMemClaims()
			c := NewClaimer(claims, time.Second, nopLogger{})
			discarded := false
			err := c.Create(ctx, Creation{
				ID: "u1", Keys: userKey("alice"), Holders: &memHolders{},
				Create:   func(context.Context, time.Duration) error { return nil },
				Activate: func(context.Context) (bool, error) { return tc.activated, tc.activateErr },
				Discard:  func(context.Context) error { discarded = true; return nil },
				Expired:  expired,
			})
			if !errors.Is(err, tc.want) && err != tc.want {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			cl, lerr := claims.Lookup(ctx, KindUsername, "alice")
			if kept := lerr == nil && cl.Owner == "u1" && cl.State == ClaimCommitted; kept != tc.kept || discarded == tc.kept {
				t.Fatalf("claim %+v (%v), discarded %v; want kept=%v", cl, lerr, discarded, tc.kept)
			}
		})
	}

	// A taken key: the pending row is discarded, the conflict answered.
	claims := newMemClaims()
	_, _ = claims.Claim(context.Background(), KindUsername, "bob", "other", "other", 0, 0)
	discarded := false
	err := NewClaimer(claims, time.Second, nopLogger{}).Create(context.Background(), Creation{
		ID: "u2", Keys: userKey("bob"), Holders: &memHolders{},
		Create: func(context.Context, time.Duration) error { return nil },
		Activate: func(context.Context) (bool, error) {
			t.Fatal("activated a creation whose key is taken")
			return false, nil
		},
		Discard: func(context.Context) error { discarded = true; return nil },
	})
	if !errors.Is(err, ErrConflict) || !discarded {
		t.Fatalf("taken key: err %v, discarded %v", err, discarded)
	}
}

// TestOrphanedClaims: a committed claim whose owner exists but does not
// hold the key (a change that stopped after committing, or an old name not
// given back) is adopted by the owner's next change, still committed; it
// stays taken for others while the change that claimed it may still land
// (the owner is at the claim's base version), and is taken over once the
// owner's version is past it (U1, U4; docs/design/renames.md).
func TestOrphanedClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	claims := newMemClaims()
	c := NewClaimer(claims, time.Second, nopLogger{})
	// "me" read version 4, claimed and committed "next", and stopped.
	_, _ = claims.Claim(ctx, KindUsername, "next", "me", "op1", 4, 0)
	_, _ = claims.Commit(ctx, KindUsername, "next", "me", "op1", 4)
	holders := &memHolders{keys: map[string]map[string]bool{"me": {"old": true}, "you": {}}, versions: map[string]int{"me": 4}}

	if _, conflict, _ := c.AcquireAll(ctx, userKey("next"), "you", "op9", 0, holders); !errors.Is(conflict, ErrConflict) || conflict == ErrBusy {
		t.Fatalf("a claim whose change may still land went to someone else: %v", conflict)
	}
	held, conflict, err := c.AcquireAll(ctx, userKey("next"), "me", "op2", 4, holders)
	if err != nil || conflict != nil || len(held) != 1 || !held[0].adopted {
		t.Fatalf("the owner's retry: held %+v, conflict %v, err %v; want it adopted", held, conflict, err)
	}
	if cl, _ := claims.Lookup(ctx, KindUsername, "next"); cl.Op != "op2" || cl.State != ClaimCommitted {
		t.Fatalf("adopted claim: %+v, want op2's and still committed", cl)
	}
	// The retry lost its race: the adopted claim is not given back (op1
	// may still land and make "me" hold it).
	c.ReleaseAll(ctx, held, "me", "op2")
	if _, err := claims.Lookup(ctx, KindUsername, "next"); err != nil {
		t.Fatalf("an adopted claim was released: %v", err)
	}
	// Once "me" is past the claim's base, nothing of op1 or op2 can land:
	// the claim is an orphan, and anyone may take it over.
	holders.mu.Lock()
	holders.versions["me"] = 5
	holders.mu.Unlock()
	held, conflict, err = c.AcquireAll(ctx, userKey("next"), "you", "op9", 0, holders)
	if err != nil || conflict != nil || len(held) != 1 {
		t.Fatalf("an orphan: held %v, conflict %v, err %v; want it taken over", held, conflict, err)
	}
	if cl, _ := claims.Lookup(ctx, KindUsername, "next"); cl.Owner != "you" || cl.State != ClaimPending {
		t.Fatalf("after takeover: %+v", cl)
	}
}
