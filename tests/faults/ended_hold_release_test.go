package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestAHoldEndedAndDroppedLeavesNoClaimBehindADeletion: bob renames
// himself bobby, which holds bob for the account, and asks for a new
// address he never confirms. Both holds end by the clock, and his next
// write of the account (a new display name) drops them from the row, as
// every write of it does: it fences them, and what it dropped was left
// for a claimer to take over. Nobody came. He then deletes the account:
// its entry records bobby and his address, its row names no hold, so the
// claims of bob and of the address he asked for stayed committed to the
// deleted account for good (a signup may take them over, but nobody need
// come). A write that drops ended holds now gives their claims back
// after it applied, as a change gives back what it left.
func TestAHoldEndedAndDroppedLeavesNoClaimBehindADeletion(t *testing.T) {
	t.Parallel()
	w := renameHoldWorld(t)
	wireDeletion(w)
	if err := rename(w, "bobby", "robert@example.org"); err != nil {
		t.Fatal(err)
	}
	w.store.Advance(accounts.DefaultRevertTTL + 24*time.Hour) // past both holds and their grace
	ctx := context.Background()
	current := w.passwords[me(w).ID]
	p := w.signedIn(t, "bob@example.org")
	display := "Bob"
	if _, err := w.svc.UpdateUser(ctx, p, p.UserID, accounts.UpdateInput{DisplayName: &display}); err != nil {
		t.Fatal(err)
	}
	if u := account(t, w); u.HeldUsernameKey != "" || u.PendingEmailKey != "" {
		t.Fatalf("the write kept the ended holds %q %q", u.HeldUsernameKey, u.PendingEmailKey)
	}
	deletedLeavesNoClaim(t, w, p, current)
}

// TestAFenceForOneEndedHoldLeavesNoClaimOfTheOthers: bob renamed himself
// bobby (bob held) and asked for robert@example.org he never confirmed;
// both holds ended, and nothing wrote the account since. A stranger
// signs up as bob: the claimer fences bob's row, which drops every hold
// that has ended, and takes bob over. The address asked for was dropped
// with it and left claimed for the account, named by nothing: when he
// deleted the account, its claim stayed committed to the deleted
// account for good. The fence now gives back the other keys it dropped.
func TestAFenceForOneEndedHoldLeavesNoClaimOfTheOthers(t *testing.T) {
	t.Parallel()
	w := renameHoldWorld(t)
	wireDeletion(w)
	if err := rename(w, "bobby", "robert@example.org"); err != nil {
		t.Fatal(err)
	}
	w.store.Advance(accounts.DefaultRevertTTL + 24*time.Hour) // past both holds and their grace
	current := w.passwords[me(w).ID]
	if err := newProbe(w).signup("bob", "stranger@example.org"); err != nil {
		t.Fatalf("a stranger's signup as bob, its hold ended: %v", err)
	}
	if u := account(t, w); u.HeldUsernameKey != "" || u.PendingEmailKey != "" {
		t.Fatalf("the fence kept the ended holds %q %q", u.HeldUsernameKey, u.PendingEmailKey)
	}
	deletedLeavesNoClaim(t, w, w.signedIn(t, "bob@example.org"), current)
}

// deletedLeavesNoClaim deletes p's account (current: its password), runs
// the deletion's job and checks that no claim names the account.
func deletedLeavesNoClaim(t *testing.T, w *world, p domain.Principal, current string) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.life.DeleteUser(ctx, p, p.UserID, accounts.Proof{CurrentPassword: &current}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.life.WorkJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if u := account(t, w); u.Status != domain.StatusDeleted {
		t.Fatalf("the account is %s, want deleted", u.Status)
	}
	claims, _ := w.store.Snapshot()
	for _, c := range claims {
		if c.Owner == p.UserID {
			t.Errorf("the deleted account still has the claim of %s %s (%s)", c.Kind, c.Key, c.State)
		}
	}
}
