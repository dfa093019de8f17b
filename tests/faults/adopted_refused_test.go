package faults

import (
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/tests/memstore"
)

// TestAnAccountCannotSquatAnAddressByRetryingARefusedChange: bob asks for
// carol@example.org; the change commits its claim and its process dies
// before the compare-and-set (an answer lost, a process overloaded on
// purpose), so the address is blocked for about a minute (U4). Then,
// every 50 s, bob asks for carol@example.org with alice's username beside
// it: each round adopted the committed claim (re-tagged to its operation,
// its clock set anew), was refused 409 on the username, and kept the
// claim, which an adopted one never gives back (the change that made it
// may still land). So the claim never grew stale, no claimant fenced
// bob, and carol's signup with her own address was refused for as long
// as bob went on, while no mail ever reached the address (no "not me"
// link). A round that adopted a claim and can no longer land fences the
// account past the version it read and then gives back what the row does
// not name: no operation that read it there can land now.
func TestAnAccountCannotSquatAnAddressByRetryingARefusedChange(t *testing.T) {
	t.Parallel()
	w := renameHoldWorld(t)
	if err := w.signup("alice", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	faultNamed(w.store, "claims.commit", 0, memstore.Crash)
	if err := rename(w, "", "carol@example.org"); err == nil {
		t.Fatal("the change whose process died answered")
	}
	recovered(w.store)
	for range 4 {
		w.store.Advance(50 * time.Second)
		if err := rename(w, "alice", "carol@example.org"); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("bob's change to alice's username answered %v, want a conflict", err)
		}
	}
	w.store.Advance(50 * time.Second)
	if err := w.signup("carol", "carol@example.org"); err != nil {
		t.Errorf("carol's signup with her address, %v after bob's change stopped: %v", 250*time.Second, err)
	}
	holders, _, _ := checkHeld(t, "after carol's signup", w)
	if holders["email/bob@example.org"] != me(w).ID {
		t.Errorf("bob's address is held by %q", holders["email/bob@example.org"])
	}
}
