package faults

import (
	"context"
	"testing"

	"shelf/domain"
)

// TestAFloodOfVerificationRequestsDoesNotHoldBackTheOwnersReset: ann's
// address is not verified. A stranger asks for its verification link
// hundreds of times in a minute (no session needed, a few addresses):
// all but the last of the hour's mails go, and every other request is
// refused, its try under the address's budget settled refused. A read
// of that budget's tries stops at its bound, oldest first, and refused
// for a minute whenever it was cut: the owner's reset, the one mail the
// verification requests may never take, was held back for as long as
// the stranger kept asking.
func TestAFloodOfVerificationRequestsDoesNotHoldBackTheOwnersReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false) // annHome not verified
	limitMail(m, 3)
	for range 600 {
		if err := m.svc.RequestVerification(ctx, domain.Principal{}, annHome); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	if link := m.box.tokenTo("reset", annHome); link == "" {
		t.Fatalf("no reset link reached the owner's mailbox (%d verification links did): the stranger's refused requests held it back",
			m.box.sentTo("verify", annHome))
	}
}
