package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestAnAuditPageEndingAtARecoveryCodesUseHasACursorThatReads: ann's
// audit holds an admin's listing of her sessions, then her own use of a
// recovery code (written before the use, at version 0: no account
// version decides it). An admin pages her audit one entry at a time:
// the first page ends at the code's use, and its nextCursor must read
// the next page (the listing), not answer 400 for a cursor the service
// made itself.
func TestAnAuditPageEndingAtARecoveryCodesUseHasACursorThatReads(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	ctx := context.Background()
	if err := f.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	admin, err := f.svc.SetAdmin(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	root := domain.Principal{UserID: admin.ID}
	if _, err := f.svc.ListSessions(ctx, root, f.ann.ID, "", 10); err != nil {
		t.Fatal(err)
	}
	f.store.Advance(time.Second)
	if err := f.secondStep(accounts.Proof{RecoveryCode: f.recovery[0]}); err != nil {
		t.Fatalf("a recovery code at the login's second step: %v", err)
	}
	var listed []domain.AuditAction
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		page, err := f.svc.Audit(ctx, root, f.ann.ID, cursor, 1)
		if err != nil {
			t.Fatalf("page %d of ann's audit (after %v, cursor %q): %v", pages+1, listed, cursor, err)
		}
		for _, e := range page.Items {
			listed = append(listed, e.Action)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	want := []domain.AuditAction{domain.AuditRecoveryCodeUsed, domain.AuditSessionsListed}
	if len(listed) != len(want) || listed[0] != want[0] || listed[1] != want[1] {
		t.Fatalf("ann's audit paged one at a time listed %v, want %v", listed, want)
	}
}
