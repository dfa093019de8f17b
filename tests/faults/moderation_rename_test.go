package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestASuspensionKeepsItsUsernameThroughARename: an admin suspends the
// member, and another renames the member while the suspension is in
// force; the suspension's records are written (again) by whoever finishes
// them: the request itself before the rename, its retry, the sweeper's
// pass over the interrupted attempt or the repair after it, or a write of
// the list row landing late. A suspension's username is the one the
// account had when the suspension took effect (the row its
// compare-and-set was decided on), in the read and in the list alike.
// Kept only by the list's records, the read showed the account's name of
// now and the list the one of the records' last write, the name at
// suspension or the new one depending on which finisher came after the
// rename (openapi.yaml: "the username when the user was suspended").
func TestASuspensionKeepsItsUsernameThroughARename(t *testing.T) {
	t.Parallel()
	retry := func(m *modWorld) { _ = m.suspend(0) }
	workers := func(m *modWorld) {
		m.store.Advance(2 * time.Minute)
		m.workers()
	}
	repair := func(m *modWorld) {
		if err := m.repair(); err != nil {
			t.Fatalf("the repair: %v", err)
		}
	}
	for _, c := range []struct {
		name    string
		fault   string // the call whose write lands late, if any
		stopped bool   // the suspension stops after its compare-and-set
		finish  func(m *modWorld)
	}{
		{name: "a suspension that answered, then the repair", finish: repair},
		{name: "a suspension stopped after its compare-and-set, finished by its retry", stopped: true, finish: retry},
		{name: "a suspension stopped after its compare-and-set, finished by the workers", stopped: true, finish: workers},
		{name: "a suspension stopped after its compare-and-set, finished by the repair", stopped: true, finish: repair},
		{name: "a suspension whose list row lands late, finished by the workers", fault: "users_by_status.insert", finish: workers},
	} {
		m := newModWorld(t)
		if c.fault != "" {
			m.store.FaultAt = func(_ int, call string) memstore.Fault {
				if call == c.fault {
					return memstore.LandLate
				}
				return memstore.None
			}
		}
		if c.stopped {
			_ = m.crashAfter("cas", func() error { return m.suspend(0) })
		} else {
			_ = m.suspend(0)
		}
		recovered(m.store)
		renamed := "renamed"
		if _, err := m.svc.UpdateUser(context.Background(), m.admin, m.member.ID, accounts.UpdateInput{Username: &renamed}); err != nil {
			t.Fatalf("%s: the rename: %v", c.name, err)
		}
		c.finish(m)
		m.store.Land()
		m.workers()
		checkSuspensionUsername(t, c.name, m, "member")
	}
}

// TestASuspensionRacingARenameKeepsTheNameItTookEffectWith: an admin's
// rename and another's suspension of the member read the account at once:
// the compare-and-set of one is slow, and the other change is made
// meanwhile, so the slow one fails its condition and decides again on the
// row the other wrote. The suspension's username is the name in the row
// its own compare-and-set was decided on: the old one when it went first
// (the rename, deciding again, keeps it), the new one when it went second.
func TestASuspensionRacingARenameKeepsTheNameItTookEffectWith(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		slow     string // the change whose compare-and-set is slow
		username string
	}{
		{name: "the rename slow, the suspension made meanwhile", slow: "rename", username: "member"},
		{name: "the suspension slow, the rename made meanwhile", slow: "suspend", username: "renamed"},
	} {
		m := newModWorld(t)
		renamed := "renamed"
		changes := map[string]func() error{
			"rename": func() error {
				_, err := m.svc.UpdateUser(context.Background(), m.admin, m.member.ID, accounts.UpdateInput{Username: &renamed})
				return err
			},
			"suspend": func() error { return m.suspend(0) },
		}
		other := changes["suspend"]
		if c.slow == "suspend" {
			other = changes["rename"]
		}
		slowed := false
		m.store.FaultAt = func(_ int, call string) memstore.Fault {
			if call == "users.update" && !slowed {
				slowed = true
				return memstore.Slow
			}
			return memstore.None
		}
		m.store.Meanwhile = func() {
			if err := other(); err != nil {
				t.Errorf("%s: the change made meanwhile: %v", c.name, err)
			}
		}
		if err := changes[c.slow](); err != nil {
			t.Fatalf("%s: the slow change: %v", c.name, err)
		}
		recovered(m.store)
		m.store.Meanwhile = nil
		m.workers()
		checkSuspensionUsername(t, c.name, m, c.username)
	}
}

// checkSuspensionUsername asserts that the member is suspended, listed
// once, and that the suspension shows username wherever it shows: the
// read, the list, the list row and the reverse lookup.
func checkSuspensionUsername(t *testing.T, name string, m *modWorld, username string) {
	t.Helper()
	ctx := context.Background()
	s, err := m.mod.GetSuspension(ctx, m.admin, m.member.ID)
	if err != nil {
		t.Fatalf("%s: the suspension: %v", name, err)
	}
	if s.Username != username {
		t.Errorf("%s: the suspension's read shows %q, want %q", name, s.Username, username)
	}
	page, err := m.mod.ListSuspended(ctx, m.admin, "", 100)
	if err != nil {
		t.Fatalf("%s: the suspended list: %v", name, err)
	}
	listed := 0
	for _, s := range page.Items {
		if s.UserID == m.member.ID {
			listed++
			if s.Username != username {
				t.Errorf("%s: the suspended list shows %q, want %q", name, s.Username, username)
			}
		}
	}
	if listed != 1 {
		t.Errorf("%s: S2: the suspended member is listed %d times", name, listed)
	}
	list, lookup, _ := m.store.Records(m.member.ID)
	if len(list) != 1 || len(lookup) != 1 {
		t.Errorf("%s: S2: the suspended member has list rows %+v and lookups %+v, want one each", name, list, lookup)
	}
	for _, r := range append(list, lookup...) {
		if r.Username != username {
			t.Errorf("%s: a record of the suspension names %q, want %q", name, r.Username, username)
		}
	}
	if u, err := m.store.Users().Get(ctx, m.member.ID); err != nil || u.Status != domain.StatusSuspended {
		t.Errorf("%s: the member: %v %v, want suspended", name, u.Status, err)
	}
}

// TestTheRepairNamesAnOlderSuspensionsListRowAsItsRead: a suspension made
// before schema 040, whose user was renamed while suspended by the
// release before (which kept no name with the suspension and wrote the
// whole row back): the account row reads the suspension as named by the
// current username, the list row still carries the name it was written
// with. Its records are all there, so nothing writes them again; the
// repair, which the upgrade asks for, saw every record present and left
// the read and the list naming two different users for as long as the
// suspension lasted. It writes the list row again at the account's
// version (past the rename's) with the name the account reads.
func TestTheRepairNamesAnOlderSuspensionsListRowAsItsRead(t *testing.T) {
	t.Parallel()
	m := newModWorld(t)
	ctx := context.Background()
	if err := m.suspend(0); err != nil {
		t.Fatal(err)
	}
	// The release before's rename: the row read back names its
	// suspension by the username, which the rename changes.
	u, err := m.store.Users().GetSerial(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	s := *u.Suspension
	u.Username, u.UsernameKey, s.Username, u.Suspension = "renamed", "renamed", "renamed", &s
	u.Version++
	if ok, err := m.store.Users().Update(ctx, u); err != nil || !ok {
		t.Fatalf("the rename of the release before: %v %v", ok, err)
	}
	if err := m.repair(); err != nil {
		t.Fatalf("the repair: %v", err)
	}
	checkSuspensionUsername(t, "a suspension from before schema 040 renamed, then the repair", m, "renamed")
}
