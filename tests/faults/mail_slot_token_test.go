package faults

import (
	"context"
	"testing"

	"shelf/tests/memstore"
)

// TestAFailedTokenWriteDoesNotSpendTheHoursMailUnsent: the mail budget
// is 3 slots. A stranger asks for three resets of ann's address while
// the node is loaded: each mail takes its slot, then the write of its
// token fails once. The mail was given up there, its slot held for the
// hour with nothing sent, so the hour's slots were spent with nothing
// in ann's mailbox and her own reset was refused for the hour. The
// token is now written again, a new one each time (one written unseen
// is a token nobody holds), before the mail is given up.
func TestAFailedTokenWriteDoesNotSpendTheHoursMailUnsent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, fault := range []memstore.Fault{memstore.FailBefore, memstore.LoseAnswer} {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			m := newMailWorld(t, false)
			limitMail(m, 3)
			for range 3 {
				failed := false
				m.store.FaultAt = func(_ int, name string) memstore.Fault {
					if name == "tokens.create" && !failed {
						failed = true
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
				t.Fatal("no reset link reached the owner's mailbox: mails whose token write failed held every slot unsent")
			}
			if sent := m.box.sentTo("reset", annHome); sent > 3 {
				t.Errorf("%d reset links were mailed; want at most the hour's 3", sent)
			}
		})
	}
}
