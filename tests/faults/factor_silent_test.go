package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
)

// breakMail makes every mail of m fail (broken) or go (not).
func (m *mailWorld) breakMail(broken bool) {
	m.box.mu.Lock()
	defer m.box.mu.Unlock()
	m.box.broken = broken
}

// lastTo is the text of the last mail to address that carries a link to
// page ("" for none).
func (b *recorder) lastTo(page, address string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	text := ""
	for _, msg := range b.sent {
		if msg.To == address && strings.Contains(msg.Text, "/#/"+page+"?token=") {
			text = msg.Text
		}
	}
	return text
}

// TestAThiefsNewRecoveryCodesAreToldToTheOwnerFirst: a thief with ann's
// session, her password and one code of her app (phished as she typed
// it) makes new recovery codes. He holds ten ways past her second factor
// from then on, hers stop working, and she would never know: nothing was
// mailed, where a factor added is told to her address before it works.
// The new codes must be told to her address first, with a link that
// recovers the account (a reset link); a notice that cannot be sent
// refuses them, her codes standing.
func TestAThiefsNewRecoveryCodesAreToldToTheOwnerFirst(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	proof := accounts.Password(password)
	toldFirst(t, f, "new recovery codes", "recovery codes", func(try int64) error {
		proof.Code = f.code(t, try)
		_, err := f.svc.NewRecoveryCodes(context.Background(), domain.Principal{UserID: f.ann.ID}, f.ann.ID, proof)
		return err
	}, func() {
		if err := f.secondStep(accounts.Proof{RecoveryCode: f.recovery[0]}); err != nil {
			t.Errorf("ann's recovery code after the refused codes: %v; want it working", err)
		}
	})
}

// TestAThiefsRemovalOfHerFactorIsToldToTheOwnerFirst: a thief with ann's
// session, her password and one code of her app removes the app, her
// last factor (her recovery codes go with it). From then on the password
// alone logs him in, whenever he likes, and she would never know:
// nothing was mailed. The removal must be told to her address first, with
// a link that recovers the account (a reset link); a notice that cannot
// be sent refuses it, her factor standing.
func TestAThiefsRemovalOfHerFactorIsToldToTheOwnerFirst(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	proof := accounts.Password(password)
	toldFirst(t, f, "the removal of ann's factor", "removed", func(try int64) error {
		proof.Code = f.code(t, try)
		return f.svc.RemoveFactor(context.Background(), domain.Principal{UserID: f.ann.ID}, f.ann.ID, f.fac.ID, proof)
	}, func() { herAppStands(t, f) })
}

// TestAnAdminsRemovalOfHerFactorIsToldToTheOwnerFirst: a thief with ann's
// password, not her phone, tells support he lost his phone, and root, an
// admin, removes ann's app ("the way back in for a user who lost both the
// phone and the recovery codes"). From then on the password alone logs
// him in, and she would never know: the audit entry is for admins,
// nothing was mailed. The removal must be told to her address first,
// with a link that recovers the account (a reset link); a notice that
// cannot be sent refuses it, her factor standing.
func TestAnAdminsRemovalOfHerFactorIsToldToTheOwnerFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFactorWorld(t)
	if err := f.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	root, err := f.svc.SetAdmin(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	toldFirst(t, f, "root's removal of ann's factor", "removed", func(int64) error {
		return f.svc.RemoveFactor(ctx, domain.Principal{UserID: root.ID}, f.ann.ID, f.fac.ID, accounts.Proof{})
	}, func() { herAppStands(t, f) })
}

// toldFirst runs change (try 0, then 1) twice: with every mail failing it
// must be refused, standing then checking that it changed nothing; with
// the mail up it must succeed and mail ann's address one notice more
// with a reset link, its text naming word.
func toldFirst(t *testing.T, f *factorWorld, what, word string, change func(try int64) error, standing func()) {
	t.Helper()
	f.breakMail(true)
	if err := change(0); err == nil {
		t.Errorf("%s with the mail down answered success, no notice sent; want it refused", what)
	}
	f.breakMail(false)
	standing()
	before := f.box.sentTo("reset", annHome)
	if err := change(1); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if f.box.sentTo("reset", annHome) != before+1 || !strings.Contains(f.box.lastTo("reset", annHome), word) {
		t.Errorf("%s told ann's address nothing: want a notice with a reset link", what)
	}
}

// herAppStands fails t unless ann's app is her one factor.
func herAppStands(t *testing.T, f *factorWorld) {
	t.Helper()
	if left, _, err := f.store.Factors().Read(context.Background(), f.ann.ID); err != nil || len(left) != 1 {
		t.Fatalf("ann's factors after the refused removal: %+v %v; want her app", left, err)
	}
}

// hisAppsProof is ann's password with a code of the app the thief added
// (thiefAddsASecondFactor).
func hisAppsProof(t *testing.T, f *factorWorld) accounts.Proof {
	t.Helper()
	factors, _, err := f.store.Factors().Read(context.Background(), f.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	proof := accounts.Password(password)
	for _, g := range factors {
		if g.Name == "second" {
			if proof.Code, err = f.totp.Code(g.Sealed, f.ann.ID, f.store.Now().Unix()/factor.Period+1); err != nil {
				t.Fatal(err)
			}
		}
	}
	return proof
}

// TestAFactorsRevertTakesTheRecoveryCodesMadeSinceItsNotice: a thief with
// ann's session, her password and one code of her app adds an app of his,
// its notice mailed to her, then makes new recovery codes with his app's
// code. Ann follows the notice's link: his app goes, and every factor
// added after it, but the codes he made stood beside her app, ten ways
// past it for whoever learns her next password. Codes made since the
// notice are of the same hand as a factor added since it, and go too; her
// reset opens her account to her app, never to his codes.
func TestAFactorsRevertTakesTheRecoveryCodesMadeSinceItsNotice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFactorWorld(t)
	f.store.Advance(time.Hour) // her app is a day old, say, when he comes
	thiefAddsASecondFactor(t, f)
	proof := hisAppsProof(t, f)
	his, err := f.svc.NewRecoveryCodes(ctx, domain.Principal{UserID: f.ann.ID}, f.ann.ID, proof)
	if err != nil {
		t.Fatalf("the thief's recovery codes: %v", err)
	}
	notices := f.box.tokens("revert-factor")
	if err := f.svc.RevertFactor(ctx, notices[len(notices)-1]); err != nil {
		t.Fatalf("the revert of the thief's app: %v", err)
	}
	r, err := f.svc.ResetPassword(ctx, f.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
	if err != nil || r.Challenge == "" {
		t.Fatalf("ann's reset after the revert: %+v %v; want a challenge for her app", r, err)
	}
	if _, err := f.svc.SecondFactor(ctx, r.Challenge, accounts.Proof{RecoveryCode: his[0]}, accounts.Client{}); err == nil {
		t.Errorf("a recovery code the thief made after his app's notice opened a session past ann's revert and reset")
	}
}

// TestAThiefsRecoveryCodesLandingAfterTheRevertDoNotStand: as
// TestAFactorsRevertTakesTheRecoveryCodesMadeSinceItsNotice, but the
// thief's new codes are slow at their write: ann's revert runs meanwhile
// (his session ended, his app removed, nothing made since to remove), and
// then his set lands in place of hers. The request must check again at
// its end that its session still works, and take its set back if not:
// else the codes it shows him stand past her revert and her reset.
func TestAThiefsRecoveryCodesLandingAfterTheRevertDoNotStand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFactorWorld(t)
	f.store.Advance(time.Hour)
	thiefAddsASecondFactor(t, f)
	proof := hisAppsProof(t, f)
	notices := f.box.tokens("revert-factor")
	var reverted error
	ran := false
	slowOnce(f.store, "factors.set_recovery", 0, func() {
		ran, reverted = true, f.svc.RevertFactor(ctx, notices[len(notices)-1])
	})
	his, err := f.svc.NewRecoveryCodes(ctx, domain.Principal{UserID: f.ann.ID}, f.ann.ID, proof)
	calm(f.store)
	if !ran || reverted != nil {
		t.Fatalf("ann's revert inside the codes' write: ran %v, answered %v", ran, reverted)
	}
	if err == nil {
		t.Errorf("the thief's codes, written after ann's revert ended his session, were shown to him")
	}
	r, rerr := f.svc.ResetPassword(ctx, f.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
	if rerr != nil || r.Challenge == "" {
		t.Fatalf("ann's reset after the revert: %+v %v; want a challenge for her app", r, rerr)
	}
	for _, code := range his {
		if _, err := f.svc.SecondFactor(ctx, r.Challenge, accounts.Proof{RecoveryCode: code}, accounts.Client{}); err == nil {
			t.Fatalf("a recovery code the thief was shown opened a session past ann's revert and reset")
		}
	}
}
