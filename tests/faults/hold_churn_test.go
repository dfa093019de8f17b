package faults

import (
	"testing"
	"time"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAnAccountCannotKeepAnEndedHoldsAddressBySigningOut (attackers are
// users too): whoever holds ann's session and password asks for annNext
// and lets the change expire, or moves her account there and confirms it
// so that annHome is held for a revert link nobody follows. Past the
// hold's end the address's reader signs up with it; before each
// compare-and-set of the fence that drops the ended hold from ann's row
// (holders.Holder), he signs out everywhere else from a session he keeps
// (it has no rate limit of its own). Each sign-out moved the version and
// wrote the row again with the ended hold in it: the fence lost all its
// rounds, the signup answered 409 concurrent_change, and the address was
// kept from its reader for as long as he kept at it, with no mail to it
// and no link left to end it ("not me" ends with its change). Every
// write of the account drops the holds that have ended, as a change of
// it does: the first sign-out fences the row itself, and the signup takes
// the address over.
func TestAnAccountCannotKeepAnEndedHoldsAddressBySigningOut(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, held string
		setup      func(t *testing.T, m *mailWorld)
		after      time.Duration
	}{
		{name: "pending", held: annNext, after: 24*time.Hour + accounts.TokenGrace + time.Second,
			setup: func(t *testing.T, m *mailWorld) {
				if err := changeEmail(m, annNext); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "recovery", held: annHome, after: accounts.DefaultRevertTTL + accounts.TokenGrace + time.Second,
			setup: thiefTakes},
	} {
		m := emailChangeWorld(t, false)
		rows := &ownerFirst{UserStore: m.rows}
		m.rows = rows
		m.rewire(func(*memstore.Store, *accounts.Config) {})
		c.setup(t, m)
		m.store.Advance(c.after)
		p := m.signedIn(t, "ann") // with the password: the sessions of the set-up have expired

		var s signOuts
		rows.owner = s.signOut(t, m.svc, p, m.ann, "")
		err := newProbe(m.world).signup("reader", c.held)
		rows.owner = nil
		if err != nil {
			t.Errorf("%s: the reader's signup with %s, its hold ended, while ann's account signs out everywhere else before each compare-and-set: %v (%d sign-outs went)",
				c.name, c.held, err, s.went)
			continue
		}
		if holders, _, _ := checkHeld(t, c.name, m.world); holders["email/"+c.held] == ann(m) || holders["email/"+c.held] == "" {
			t.Errorf("%s: %s is held by %q, want the reader's account", c.name, c.held, holders["email/"+c.held])
		}
		u := m.account(t, c.name)
		if u.PendingEmailKey == c.held || u.RecoveryEmailKey == c.held {
			t.Errorf("%s: ann's row still names %s: %+v", c.name, c.held, u)
		}
		checkEmailClaims(t, c.name, m, u)
	}
}
