package faults

import (
	"context"
	"testing"

	"shelf/tests/memstore"
)

// TestATakeWhoseAnswerWasLostStillMails: the mail budget is 3 slots.
// A stranger asks for three resets of ann's address while the node is
// loaded (a burst's compare-and-sets contend for one partition and time
// out): each take of a slot applies, and its answer is lost. Each mail
// was then held back on the unknown outcome, its slot held for the hour
// with no mail sent, so the budget was spent with nothing in ann's
// mailbox, and her own reset was refused for the hour: a held-back mail
// a stranger caused. A take whose outcome is unknown is now sent again
// for the same slot under the same attempt, which finds its own row
// (taken: the mail goes) or another's (never taken: the next slot).
func TestATakeWhoseAnswerWasLostStillMails(t *testing.T) {
	t.Parallel()
	resetsWithAFaultEach(t, "attempts.take", memstore.LoseAnswer)
}

// resetsWithAFaultEach has a stranger ask for the three resets of ann's
// address an hour allows (limitMail 3), each meeting fault at its first
// store call named call, then ann ask for hers: a reset link must reach
// her mailbox, and no more than the hour's three.
func resetsWithAFaultEach(t *testing.T, call string, fault memstore.Fault) {
	t.Helper()
	ctx := context.Background()
	m := newMailWorld(t, false)
	limitMail(m, 3)
	for range 3 {
		met := false
		m.store.FaultAt = func(_ int, name string) memstore.Fault {
			if name == call && !met {
				met = true
				return fault
			}
			return memstore.None
		}
		if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
			t.Fatal(err)
		}
	}
	m.store.FaultAt = nil
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	if link := m.box.tokenTo("reset", annHome); link == "" {
		t.Fatalf("no reset link reached the owner's mailbox: the stranger's resets, each meeting %v at %s, held every slot with no mail sent", fault, call)
	}
	if sent := m.box.sentTo("reset", annHome); sent > 3 {
		t.Errorf("%d reset links were mailed; want at most the hour's 3", sent)
	}
}
