package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/moderation"
	"shelf/tests/memstore"
)

// renameHoldWorld is a world that mails, with bob signed up.
func renameHoldWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld()
	mailing(w)
	if err := w.signup("bob", "bob@example.org"); err != nil {
		t.Fatal(err)
	}
	return w
}

// takes reports whether a stranger's signup as username answers success
// (under an address of its own, i).
func takes(w *world, username, i string) bool {
	return newProbe(w).signup(username, "stranger"+i+"@example.org") == nil
}

// TestAThiefsRenameLeavesTheOwnersNameHeldForHer (attackers are users
// too): whoever holds bob's password and a session renames the account
// bobby. bob was free at once for anyone to take, and no mail told bob:
// after his reset he found his name gone for good. The name a rename by
// the owner leaves is held for the account as long as an email change's
// revert link works: a stranger finds it taken, the account's address is
// told with a reset link, and bob, once he chose a new password, changes
// back to it, which frees bobby.
func TestAThiefsRenameLeavesTheOwnersNameHeldForHer(t *testing.T) {
	t.Parallel()
	w := renameHoldWorld(t)
	if err := rename(w, "bobby", ""); err != nil {
		t.Fatal(err)
	}
	if takes(w, "bob", "1") {
		t.Fatal("a stranger took bob right after the thief's rename")
	}
	notice := w.mail.sent[len(w.mail.sent)-1]
	if notice.To != "bob@example.org" || !strings.Contains(notice.Subject, "username") || !strings.Contains(notice.Text, "/#/reset?token=") {
		t.Fatalf("the last mail after the rename: %+v, want a notice with a reset link to bob's address", notice)
	}
	ctx := context.Background()
	r, err := w.svc.ResetPassword(ctx, w.mail.link(t, "reset"), "a new and long password 1", accounts.Client{})
	if err != nil {
		t.Fatalf("bob's reset through the notice's link: %v", err)
	}
	p, err := w.svc.Authenticate(ctx, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	back, current := "bob", "a new and long password 1"
	v, err := w.svc.UpdateUser(ctx, p, me(w).ID, accounts.UpdateInput{Username: &back, Proof: accounts.Proof{CurrentPassword: &current}})
	if err != nil {
		t.Fatalf("bob's change back to his name, held for him: %v", err)
	}
	if v.User.HeldUsername != "" {
		t.Errorf("the change back's answer shows %q held; a change back holds nothing", v.User.HeldUsername)
	}
	if !takes(w, "bobby", "2") {
		t.Error("bobby, which the change back left, is not free")
	}
	holders, _, _ := checkHeld(t, "after the change back", w)
	if holders["username/bob"] != me(w).ID {
		t.Errorf("bob is held by %q, want bob's account", holders["username/bob"])
	}
	if u := account(t, w); u.HeldUsernameKey != "" {
		t.Errorf("a change back holds nothing; the row holds %q", u.HeldUsernameKey)
	}
}

// TestASecondRenameKeepsTheFirstNameHeld: the thief renames bob bobby,
// then bobby robert, so that the hold of the second rename would free
// bob. The first name left stays held; the second's is free at once.
func TestASecondRenameKeepsTheFirstNameHeld(t *testing.T) {
	t.Parallel()
	w := renameHoldWorld(t)
	current := password
	for _, name := range []string{"bobby", "robert"} {
		v, err := w.svc.UpdateUser(context.Background(), principal(me(w)), me(w).ID, accounts.UpdateInput{Username: &name, Proof: accounts.Proof{CurrentPassword: &current}})
		if err != nil {
			t.Fatal(err)
		}
		// The answer shows the name held, and until when: bob both times.
		if v.User.HeldUsername != "bob" || !v.User.HeldUsernameUntil.After(w.store.Now()) {
			t.Errorf("the answer of the rename to %s shows %q held until %v, want bob", name, v.User.HeldUsername, v.User.HeldUsernameUntil)
		}
	}
	if takes(w, "bob", "1") {
		t.Error("a stranger took bob after a second rename")
	}
	if !takes(w, "bobby", "2") {
		t.Error("bobby, which the second rename left, is not free")
	}
	if last := renameNotices(w)[1]; !strings.Contains(last.Text, "the account's name before it stays this account's until") {
		t.Errorf("the second rename's notice does not say which name is held: %q", last.Text)
	}
}

// TestAnAdminsRenameHoldsNothing: a name an admin took away (an offence,
// an impersonation) is not the user's to take back, so it is free at
// once.
func TestAnAdminsRenameHoldsNothing(t *testing.T) {
	t.Parallel()
	w := newWorld()
	root := w.rootAndMember(t)
	name := "renamed"
	if _, err := w.svc.UpdateUser(context.Background(), domain.Principal{UserID: root.ID}, w.created[1].ID, accounts.UpdateInput{Username: &name}); err != nil {
		t.Fatal(err)
	}
	if !takes(w, "member", "1") {
		t.Error("the name an admin took away is not free")
	}
}

// TestANameLeftIsFreeOnceItsHoldEnds: past the hold a stranger takes bob
// (the claimer fences bob's row first), and bob's change back that read
// the hold alive, its write held at a node to land after the fence,
// applies to nothing: bob is the stranger's alone (U1), and bob's
// account claims it like any name, refused.
func TestANameLeftIsFreeOnceItsHoldEnds(t *testing.T) {
	t.Parallel()
	w := renameHoldWorld(t)
	if err := rename(w, "bobby", ""); err != nil {
		t.Fatal(err)
	}
	w.store.Advance(accounts.DefaultRevertTTL - lease)
	w.store.FaultAt = func(_ int, call string) memstore.Fault {
		if call == "users.update" {
			return memstore.LandLate
		}
		return memstore.None
	}
	if err := rename(w, "bob", ""); err == nil {
		t.Fatal("the change back whose write is held answered")
	}
	w.store.FaultAt = nil
	w.store.Advance(2 * lease)
	if !takes(w, "bob", "1") {
		t.Fatal("a stranger cannot take bob past its hold")
	}
	w.store.Land()
	holders, _, _ := checkHeld(t, "after the late change back", w)
	if holders["username/bob"] == me(w).ID || holders["username/bob"] == "" {
		t.Errorf("bob is held by %q, want the stranger's account", holders["username/bob"])
	}
	if err := rename(w, "bob", ""); err == nil {
		t.Error("bob's account took bob back from the stranger")
	}
	if u := account(t, w); u.Username != "bobby" || u.HeldUsernameKey != "" {
		t.Errorf("bob's account: %q holding %q, want bobby holding nothing", u.Username, u.HeldUsernameKey)
	}
}

// renameNotices are the mails telling of a rename, oldest first.
func renameNotices(w *world) []accounts.Message {
	w.mail.mu.Lock()
	defer w.mail.mu.Unlock()
	var out []accounts.Message
	for _, m := range w.mail.sent {
		if strings.Contains(m.Subject, "username") {
			out = append(out, m)
		}
	}
	return out
}

// account is the first account's row as stored.
func account(t *testing.T, w *world) domain.User {
	t.Helper()
	u, err := w.store.Users().GetSerial(context.Background(), me(w).ID)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestADeletedAccountLeavesNoClaimOfANameItHeld: bob renames himself
// bobby, which holds bob for the account, and asks for a new address;
// then he deletes the account. The deletion released the names its entry
// recorded (bobby, his address) and MarkDeleted erased the rest from the
// row, so the claims of bob and of the address asked for stayed
// committed to the deleted account for good: its former name and an
// address linked to its id after the personal data was to be gone, and a
// claim naming an account whose row names nothing. MarkDeleted now gives
// back every key the row it erases named in a hold.
func TestADeletedAccountLeavesNoClaimOfANameItHeld(t *testing.T) {
	t.Parallel()
	w := renameHoldWorld(t)
	wireDeletion(w)
	if err := rename(w, "bobby", "robert@example.org"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, current := me(w).ID, w.passwords[me(w).ID]
	p := w.signedIn(t, "bob@example.org")
	if _, err := w.life.DeleteUser(ctx, p, id, accounts.Proof{CurrentPassword: &current}); err != nil {
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
		if c.Owner == id {
			t.Errorf("the deleted account still has the claim of %s %s (%s)", c.Kind, c.Key, c.State)
		}
	}
}

// TestARenameThatCouldNotLandIsNotToldAsDone: bob's rename to bobby loses
// the answer of its claim of bobby (or of its commit), so it answers 503
// without ever sending the account's compare-and-set: bob stays bob, and
// no retry of that request can make him bobby. Its notice went out all
// the same, as after an unknown compare-and-set: "changed from bob to
// bobby ... bob stays this account's until", a change that never was and
// a hold that never began, spending a mail of the account's own hourly
// budget. Only a round whose compare-and-set was sent tells of it now.
func TestARenameThatCouldNotLandIsNotToldAsDone(t *testing.T) {
	t.Parallel()
	for _, stmt := range []string{"claims.claim", "claims.commit"} {
		w := renameHoldWorld(t)
		holdFirst(w.store, stmt, memstore.LoseAnswer)
		if err := rename(w, "bobby", ""); !errors.Is(err, domain.ErrOutcomeUnknown) {
			t.Fatalf("%s: the rename answered %v, want an unknown outcome", stmt, err)
		}
		w.store.FaultAt = nil
		w.store.Land()
		if u := account(t, w); u.Username != "bob" || u.HeldUsernameKey != "" {
			t.Fatalf("%s: the account is %q holding %q, want bob holding nothing", stmt, u.Username, u.HeldUsernameKey)
		}
		if n := len(renameNotices(w)); n != 0 {
			t.Errorf("%s: %d notices of a rename that never was", stmt, n)
		}
	}
}

// TestASuspensionDoesNotRunANamesHoldOut (attackers are users too): the
// thief renames the member's account, then gets it suspended (abuse an
// admin acts on) for longer than the hold: the owner cannot sign in to
// change back while it lasts, and the hold ended by the clock, her name
// free for him. A name left is held while a suspension stands, and for
// as long as the hold lasts after it ends (by its own end, or lifted):
// she has that time to take it back.
func TestASuspensionDoesNotRunANamesHoldOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hold := accounts.DefaultRevertTTL
	for _, c := range []struct {
		name    string
		suspend time.Duration // 0: until lifted
		lift    time.Duration // when the admin lifts it, from the suspension
	}{
		{name: "a suspension ending by itself", suspend: hold + 3*24*time.Hour},
		{name: "a suspension lifted by an admin", lift: hold + 3*24*time.Hour},
	} {
		m := newModWorld(t)
		current, next := password, "thiefname"
		if _, err := m.svc.UpdateUser(ctx, principal(m.member), m.member.ID, accounts.UpdateInput{Username: &next, Proof: accounts.Proof{CurrentPassword: &current}}); err != nil {
			t.Fatal(err)
		}
		m.store.Advance(time.Hour)
		if err := m.suspend(c.suspend); err != nil {
			t.Fatal(err)
		}
		m.store.Advance(hold + 2*24*time.Hour) // past the hold, the suspension standing
		if takes(m.world, "member", "1") {
			t.Fatalf("%s: a stranger took the member's name while the account stood suspended", c.name)
		}
		m.store.Advance(24 * time.Hour) // the suspension's end
		if c.suspend == 0 {
			if err := m.unsuspend(); err != nil {
				t.Fatal(err)
			}
		}
		m.store.Advance(hold - time.Hour) // within the hold's length after it
		if takes(m.world, "member", "2") {
			t.Fatalf("%s: a stranger took the member's name %s after the suspension ended", c.name, hold-time.Hour)
		}
		p := m.signedIn(t, next)
		back := "member"
		if _, err := m.svc.UpdateUser(ctx, p, m.member.ID, accounts.UpdateInput{Username: &back, Proof: accounts.Proof{CurrentPassword: &current}}); err != nil {
			t.Errorf("%s: the owner's change back after the suspension: %v", c.name, err)
		}
		checkHeld(t, c.name, m.world)
	}
}

// TestANameHeldThroughASuspensionIsFreeAfterIt: past the hold's length
// after the suspension's end, the name is anyone's.
func TestANameHeldThroughASuspensionIsFreeAfterIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newModWorld(t)
	current, next := password, "thiefname"
	if _, err := m.svc.UpdateUser(ctx, principal(m.member), m.member.ID, accounts.UpdateInput{Username: &next, Proof: accounts.Proof{CurrentPassword: &current}}); err != nil {
		t.Fatal(err)
	}
	if err := m.suspend(10 * 24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	m.store.Advance(10*24*time.Hour + accounts.DefaultRevertTTL + time.Minute)
	if !takes(m.world, "member", "1") {
		t.Error("the member's name is still held past the hold's length after the suspension")
	}
	checkHeld(t, "past the hold after the suspension", m.world)
}

// TestANameHeldPastASuspensionIsToldWithItsEnd: the member renames
// herself, is suspended, and once the suspension ended (her name held
// for the hold's length after it) a thief with her session and password
// renames the account again. The rename's answer and its notice told her
// the name was held until the first hold's end, days past, while it was
// held until the hold's length after the suspension: she read her name
// as lost, or anyone's. Both tell the end the claimer keeps.
func TestANameHeldPastASuspensionIsToldWithItsEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	mailing(w)
	if err := w.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	root, err := w.svc.SetAdmin(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.signup("member", "member@example.org"); err != nil {
		t.Fatal(err)
	}
	m := &modWorld{world: w, admin: domain.Principal{UserID: root.ID}, member: w.created[1],
		mod: moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: w.store.Now, Attempts: w.store.ModerationAttempts()},
			w.svc, w.store.Users(), w.store.Suspensions())}
	current, first, second := password, "membertwo", "thiefname"
	if _, err := m.svc.UpdateUser(ctx, principal(m.member), m.member.ID, accounts.UpdateInput{Username: &first, Proof: accounts.Proof{CurrentPassword: &current}}); err != nil {
		t.Fatal(err)
	}
	m.store.Advance(time.Hour)
	if err := m.suspend(10 * 24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	end := m.store.Now().Add(10*24*time.Hour + accounts.DefaultRevertTTL)
	m.store.Advance(11 * 24 * time.Hour) // the suspension over, the first hold's end past
	p := m.signedIn(t, first)
	v, err := m.svc.UpdateUser(ctx, p, m.member.ID, accounts.UpdateInput{Username: &second, Proof: accounts.Proof{CurrentPassword: &current}})
	if err != nil {
		t.Fatal(err)
	}
	if v.User.HeldUsername != "member" || !v.User.HeldUsernameUntil.Equal(end) {
		t.Errorf("the second rename's answer: %q held until %v, want member until %v", v.User.HeldUsername, v.User.HeldUsernameUntil, end)
	}
	notice := m.mail.sent[len(m.mail.sent)-1].Text
	if want := end.UTC().Format("2 January 2006, 15:04 MST"); !strings.Contains(notice, want) {
		t.Errorf("the second rename's notice does not say the name is held until %s:\n%s", want, notice)
	}
	if takes(m.world, "member", "1") {
		t.Error("a stranger took the member's name within the hold after the suspension")
	}
	checkHeld(t, "the second rename after a suspension", m.world)
}

// TestASuspensionAfterAHoldEndedDoesNotBringTheNameBack: the member
// renames herself and leaves her name unclaimed past its hold, writing
// nothing to her account since; then an admin suspends her, until lifted
// (a ban) or for a day. The suspension took the name back for her: while
// it stood the name read as held, for good under a ban, and for the
// hold's length after its lift, though no clock of hers was stopped (she
// had the whole hold to change back). A suspension's write drops the
// holds that ended before it, as the account's own writes do, and gives
// their claims back.
func TestASuspensionAfterAHoldEndedDoesNotBringTheNameBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, suspend := range []time.Duration{0, 24 * time.Hour} {
		m := newModWorld(t)
		current, next := password, "newname"
		if _, err := m.svc.UpdateUser(ctx, principal(m.member), m.member.ID, accounts.UpdateInput{Username: &next, Proof: accounts.Proof{CurrentPassword: &current}}); err != nil {
			t.Fatal(err)
		}
		m.store.Advance(accounts.DefaultRevertTTL + time.Hour) // past the hold
		if err := m.suspend(suspend); err != nil {
			t.Fatal(err)
		}
		if suspend > 0 {
			m.store.Advance(suspend + time.Hour) // over by itself
		}
		if !takes(m.world, "member", "1") {
			t.Errorf("a suspension of %v begun past the hold's end brought the name left back for the account", suspend)
		}
		checkHeld(t, "a suspension after the hold", m.world)
	}
}
