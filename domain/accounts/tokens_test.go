package accounts

import (
	"strings"
	"testing"
	"time"

	"shelf/domain"
)

// TestAResetLinkIsMailedAgainstTheRecoveries: a reset token mailed now
// matches until a recovery moves the account's recovery epoch on, whatever
// the password does; one mailed before migration 036 (a print of the
// password epoch) or 015 (of the hash) matches until the password changes.
func TestAResetLinkIsMailedAgainstTheRecoveries(t *testing.T) {
	u := domain.User{ID: "u_ann", PasswordHash: "$argon2id$old", PasswordEpoch: 4, RecoveryEpoch: 1}
	now := Token{PasswordPrint: RecoveryPrint(u)}
	before036 := Token{PasswordPrint: PasswordPrint(u)}
	before015 := Token{PasswordPrint: hashPrint(u.PasswordHash)}
	for name, tok := range map[string]Token{"now": now, "before 036": before036, "before 015": before015} {
		if !mailedAgainst(tok, u) {
			t.Errorf("a token mailed %s does not match the account it was mailed for", name)
		}
	}
	changed := u
	changed.PasswordHash, changed.PasswordEpoch = "$argon2id$new", u.PasswordEpoch+1
	if !mailedAgainst(now, changed) {
		t.Error("a change of the password made a reset link stale")
	}
	if mailedAgainst(before036, changed) || mailedAgainst(before015, changed) {
		t.Error("a link mailed before the recovery epoch outlives a change of the password")
	}
	recovered := changed
	recovered.RecoveryEpoch++
	if mailedAgainst(now, recovered) {
		t.Error("a reset link outlives a recovery")
	}
	other := u
	other.ID = "u_bob"
	if mailedAgainst(now, other) {
		t.Error("a reset link matches another account at the same epoch")
	}
}

// TestAPasswordNoticeCarriesNoChosenTextToAnUnverifiedAddress: the
// notice of a password change greets by name only a verified address
// (whoever typed an unverified one chose the name too), and carries a
// reset link.
func TestAPasswordNoticeCarriesNoChosenTextToAnUnverifiedAddress(t *testing.T) {
	a := &Service{mail: Mail{PublicURL: "https://shelf.example.org", ResetTTL: time.Hour}}
	u := domain.User{ID: "u_ann", Username: "ann", DisplayName: "CALL +1 555 0100 NOW", Email: "ann@example.org"}
	m := a.passwordNotice(u, "tok")
	if strings.Contains(m.Text, u.DisplayName) || strings.Contains(m.Text, u.Username) {
		t.Errorf("the notice to an unverified address carries the name typed: %q", m.Text)
	}
	if !strings.Contains(m.Text, "https://shelf.example.org/#/reset?token=tok") || m.To != u.Email {
		t.Errorf("the notice: %+v", m)
	}
	u.EmailVerifiedAt = time.Unix(1, 0)
	if m := a.passwordNotice(u, "tok"); !strings.Contains(m.Text, "Hello "+u.DisplayName+",") {
		t.Errorf("the notice to a verified address does not greet by name: %q", m.Text)
	}
}
