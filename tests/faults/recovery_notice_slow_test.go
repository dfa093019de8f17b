package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestASlowTakeLeavesTheRecoveryNoticeItsTime: a thief with ann's
// password and one of her recovery codes logs in with them. The notice
// of the code's use, mailed after the answer, is her one warning that
// her codes were stolen; the take of its slot answers just as the mail
// job's deadline passes (a node the thief loaded), and the mail, sent on
// that spent context, never left. Once a mail holds its slot it has time
// of its own, as every other notice has (TestASlowTakeLeavesTheMailItsTime).
// It waits out a mail job's deadline (30 s).
func TestASlowTakeLeavesTheRecoveryNoticeItsTime(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	slow := &slowTake{}
	f.rewire(func(st *memstore.Store, c *accounts.Config) {
		slow.Attempts = st.Attempts()
		c.Throttle = accounts.Throttle{Store: slow, PerAddress: 5, PerLogin: 50, Window: 15 * time.Minute}
		c.Mail = accounts.Mail{Tokens: st.Tokens(), Mailer: sentMail{f.box}, PublicURL: "https://shelf.example.org",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour, PerAddress: 5}
	})
	before := f.box.count()
	slow.armed.Store(true)
	if err := f.secondStep(accounts.Proof{RecoveryCode: f.recovery[0]}); err != nil {
		t.Fatalf("the thief's second step with her recovery code: %v", err)
	}
	if f.box.count() != before+1 {
		t.Fatal("no notice of the recovery code's use reached the owner: its slot was taken as the mail job's deadline passed, and the mail was sent on that spent context")
	}
}

// sentMail is a mailer as SMTP sends: a mail whose context has ended is
// never sent.
type sentMail struct{ accounts.Mailer }

func (s sentMail) Send(ctx context.Context, m accounts.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Mailer.Send(ctx, m)
}
