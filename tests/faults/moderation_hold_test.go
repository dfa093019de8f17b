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

// churning is a moderation store whose every compare-and-set of an
// account first lets its owner change that account.
type churning struct {
	moderation.Users
	owner func()
}

func (c churning) Update(ctx context.Context, u domain.User) (bool, error) {
	c.owner()
	return c.Users.Update(ctx, u)
}

// TestAUserCannotHoldHisSuspensionBack (attackers are users too): a member
// about to be suspended signs out everywhere else just before each of the
// admin's compare-and-sets lands, from a session he keeps, as fast as he
// likes (it has no rate limit: it must work for an owner facing a thief).
// The suspension is a compare-and-set on the account's version, which each
// sign-out moves: it lost all its eight rounds and answered 409
// concurrent_change, and the member went on as before for as long as he
// kept at it (docs/gaps.md had it). After a lost round, the account's own
// changes give way for a few seconds: the suspension lands in its second
// round, the member's changes in that time are refused 409 with words
// naming the admin's change, and once the hold's time has passed (after an
// unsuspension) his changes go through again.
func TestAUserCannotHoldHisSuspensionBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	root := w.rootAndMember(t)
	admin, member := domain.Principal{UserID: root.ID}, w.created[1]
	var s signOuts
	churn := s.signOut(t, w.svc, w.signedIn(t, "member"), member, "admin")
	mod := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: w.store.Now, Attempts: w.store.ModerationAttempts()},
		w.svc, churning{Users: w.store.Users(), owner: churn}, w.store.Suspensions())
	if _, err := mod.Suspend(ctx, admin, member.ID, moderation.SuspendInput{Reason: "spam"}); err != nil {
		t.Fatalf("the suspension while the member changes his account before each round: %v (his changes: %d went, %d refused)", err, s.went, s.refused)
	}
	s.gaveWay(t)
	u, err := w.store.Users().GetSerial(ctx, member.ID)
	if err != nil || u.Status != domain.StatusSuspended {
		t.Fatalf("the member after the suspension: %v %v, want suspended", u.Status, err)
	}

	// Lifted within the hold's time, the account's changes still wait it
	// out; past it, they go through.
	if err := mod.Unsuspend(ctx, admin, member.ID); err != nil {
		t.Fatalf("the unsuspension: %v", err)
	}
	var after signOuts
	churn = after.signOut(t, w.svc, w.signedIn(t, "member"), member, "admin")
	churn()
	w.store.Advance(6 * time.Second)
	churn()
	if after.refused != 1 || after.went != 1 {
		t.Errorf("the member's changes right after the lift and past the hold: %d refused, %d went; want one of each", after.refused, after.went)
	}
}

// TestAUserCannotHoldAnAdminsDeletionBack (attackers are users too): a
// member an admin deletes signs out everywhere else just before each of
// the deletion's compare-and-sets is sent (after its entry), from a
// session he keeps. The deletion is a compare-and-set on the account's
// version, which each sign-out moves: it lost all its eight rounds and
// answered 409 concurrent_change, the member still active, for as long as
// he kept at it. As a suspension does, a round that follows a lost one
// holds the account's own changes back: the deletion begins in its second
// round, and the member's sign-outs after the first give way.
func TestAUserCannotHoldAnAdminsDeletionBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	root := w.rootAndMember(t)
	wireDeletion(w)
	admin, member := domain.Principal{UserID: root.ID}, w.created[1]
	var s signOuts
	churn := s.signOut(t, w.svc, w.signedIn(t, "member"), member, "")
	w.life.Hooks.AfterDeletionStep = func(step string) error {
		if step == "entry" {
			churn()
		}
		return nil
	}
	if _, err := w.life.DeleteUser(ctx, admin, member.ID, accounts.Proof{}); err != nil {
		t.Fatalf("the deletion while the member changes his account before each round: %v (his changes: %d went, %d refused)", err, s.went, s.refused)
	}
	s.gaveWay(t)
	if u, err := w.store.Users().GetSerial(ctx, member.ID); err != nil || u.Status != domain.StatusDeleting {
		t.Fatalf("the member after the deletion's request: %v %v, want deleting", u.Status, err)
	}
}

// ownerFirst is an account store whose every compare-and-set of an
// account first lets its owner change that account (once: the owner's own
// compare-and-set goes straight on).
type ownerFirst struct {
	accounts.UserStore
	owner  func()
	inside bool
}

func (o *ownerFirst) Update(ctx context.Context, u domain.User) (bool, error) {
	if o.owner != nil && !o.inside {
		o.inside = true
		o.owner()
		o.inside = false
	}
	return o.UserStore.Update(ctx, u)
}

// churnWorld is a world of an admin and a member signed in, on a store
// whose every compare-and-set of an account first lets the member sign
// out everywhere else, from the session he keeps (churn).
type churnWorld struct {
	*world
	rows   *ownerFirst
	admin  domain.Principal
	member domain.User
	token  string
	signOuts
}

func newChurnWorld(t *testing.T) *churnWorld {
	t.Helper()
	ctx := context.Background()
	w := newWorld()
	rows := &ownerFirst{UserStore: w.rows}
	w.rows = rows
	w.rewire(func(*memstore.Store, *accounts.Config) {})
	root := w.rootAndMember(t)
	r, err := w.svc.Login(ctx, "member", password, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	return &churnWorld{world: w, rows: rows, admin: domain.Principal{UserID: root.ID}, member: w.created[1], token: r.Token}
}

// churn has the member sign out everywhere else before each
// compare-and-set of an account, until the returned stop is called.
func (c *churnWorld) churn(t *testing.T) (stop func()) {
	t.Helper()
	ctx := context.Background()
	p, err := c.svc.Authenticate(ctx, c.token)
	if err != nil {
		t.Fatal(err)
	}
	c.rows.owner = c.signOut(t, c.svc, p, c.member, "")
	return func() { c.rows.owner = nil }
}

// signOuts counts an account's sign-outs everywhere else (signOut): those
// that went through, and those refused 409 concurrent_change with a time
// to retry after.
type signOuts struct{ went, refused int }

// signOut is one sign-out everywhere else of u's from session p, counted
// in s; a refusal's words must contain naming ("" for any).
func (s *signOuts) signOut(t *testing.T, svc *accounts.Service, p domain.Principal, u domain.User, naming string) func() {
	return func() {
		err := svc.RevokeSessions(context.Background(), p, u.ID, true)
		var de *domain.Error
		switch {
		case err == nil:
			s.went++
		case errors.As(err, &de) && de.Code == "concurrent_change" && strings.Contains(de.Message, naming) && de.RetryAfter > 0:
			s.refused++
		default:
			t.Errorf("%s's sign-out everywhere else: %v", u.Username, err)
		}
	}
}

// gaveWay checks that of the sign-outs, the first went and those after
// it gave way.
func (s *signOuts) gaveWay(t *testing.T) {
	t.Helper()
	if s.went != 1 || s.refused < 1 {
		t.Errorf("the owner's changes: %d went, %d refused; want the first to go and those after it to give way", s.went, s.refused)
	}
}

// TestAUserCannotHoldAnAdminsSignOutOfHisSessionsBack (attackers are users
// too): an admin ends every session of a member, who signs out everywhere
// else just before each of the admin's compare-and-sets lands, from a
// session he keeps. Each sign-out moves the account's version: the
// admin's sign-out lost all its eight rounds and answered 409
// concurrent_change, and the member's kept session went on working. As a
// suspension does, an admin's round that follows a lost one holds the
// account's own changes back: the admin's sign-out lands in its second
// round and the member's session ends.
func TestAUserCannotHoldAnAdminsSignOutOfHisSessionsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChurnWorld(t)
	stop := c.churn(t)
	err := c.svc.RevokeSessions(ctx, c.admin, c.member.ID, false)
	stop()
	if err != nil {
		t.Fatalf("the admin's sign-out while the member changes his account before each round: %v (his changes: %d went, %d refused)", err, c.went, c.refused)
	}
	c.gaveWay(t)
	if _, err := c.svc.Authenticate(ctx, c.token); err == nil {
		t.Error("the member's kept session still works after the admin ended every session of his")
	}
}

// TestAUserCannotHoldAnAdminsRenameBack (attackers are users too): an
// admin renames a member (a username that may not stay), who signs out
// everywhere else just before each of the admin's compare-and-sets lands.
// The rename lost all its eight rounds and answered 409
// concurrent_change, the member keeping his username for as long as he
// kept at it. An admin's round that follows a lost one holds the
// account's own changes back: the rename lands in its second round.
func TestAUserCannotHoldAnAdminsRenameBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChurnWorld(t)
	stop := c.churn(t)
	name := "renamed"
	_, err := c.svc.UpdateUser(ctx, c.admin, c.member.ID, accounts.UpdateInput{Username: &name})
	stop()
	if err != nil {
		t.Fatalf("the admin's rename while the member changes his account before each round: %v (his changes: %d went, %d refused)", err, c.went, c.refused)
	}
	c.gaveWay(t)
	if u, err := c.store.Users().GetSerial(ctx, c.member.ID); err != nil || u.Username != name {
		t.Errorf("the member after the admin's rename: %q %v, want %q", u.Username, err, name)
	}
}

// TestAnAdminCannotHoldTheRevocationOfHisRoleBack (attackers are users
// too): the operator revokes an admin's role (`api admin revoke`), and
// that admin signs out everywhere else just before each of its
// compare-and-sets lands. The revocation lost all its eight rounds and
// failed concurrent_change, the admin keeping his role for as long as he
// kept at it. A round that follows a lost one holds the account's own
// changes back: the revocation lands in its second round.
func TestAnAdminCannotHoldTheRevocationOfHisRoleBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChurnWorld(t)
	if _, err := c.svc.SetAdmin(ctx, "member", true); err != nil {
		t.Fatal(err)
	}
	stop := c.churn(t)
	_, err := c.svc.SetAdmin(ctx, "member", false)
	stop()
	if err != nil {
		t.Fatalf("the revocation while the admin changes his account before each round: %v (his changes: %d went, %d refused)", err, c.went, c.refused)
	}
	c.gaveWay(t)
	if u, err := c.store.Users().GetSerial(ctx, c.member.ID); err != nil || u.IsAdmin() {
		t.Errorf("the member after the revocation: admin %v (%v), want not", u.IsAdmin(), err)
	}
}

// TestAUserCannotHoldAnAdminsFactorRemovalBack (attackers are users too):
// root, an admin, removes ann's authenticator (for an owner who lost it,
// say), and whoever holds ann's session signs out everywhere else just
// before each compare-and-set of her account lands. The removal's fence
// (a compare-and-set on her version: she is no admin) lost all its
// eight rounds, the removal answered 409 concurrent_change and the
// factor stood for as long as he kept at it. An admin's round that
// follows a lost one holds the account's own changes back: the fence
// lands in its second round and the factor goes.
func TestAUserCannotHoldAnAdminsFactorRemovalBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFactorWorld(t)
	rows := &ownerFirst{UserStore: f.rows}
	f.rows = rows
	f.rewire(func(*memstore.Store, *accounts.Config) {})
	if err := f.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	root, err := f.svc.SetAdmin(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.svc.SecondFactor(ctx, f.challenge, accounts.Proof{Code: f.code(t, 0)}, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.Authenticate(ctx, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	var s signOuts
	rows.owner = s.signOut(t, f.svc, p, f.ann, "")
	err = f.svc.RemoveFactor(ctx, domain.Principal{UserID: root.ID}, f.ann.ID, f.fac.ID, accounts.Proof{})
	rows.owner = nil
	if err != nil {
		t.Fatalf("root's removal while ann's account changes before each round: %v (her changes: %d went, %d refused)", err, s.went, s.refused)
	}
	s.gaveWay(t)
	if factors, _, err := f.store.Factors().Read(ctx, f.ann.ID); err != nil || len(factors) != 0 {
		t.Errorf("ann's factors after root's removal: %+v %v, want none", factors, err)
	}
}

// TestAHeldPasswordChangeSpendsNoTry: while an admin's contested change
// holds ann's account, her password change (wrong password or right) was
// refused only after its proof, each try counted by the throttle and
// hashed, for a change that gives way anyway. It is refused 409 before
// the proof, the wrong password not judged; past the hold, the change
// goes through.
func TestAHeldPasswordChangeSpendsNoTry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	if err := w.signup("ann", "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	ann, p := w.created[0], w.signedIn(t, "ann")
	if ok, err := w.store.Users().Hold(ctx, ann.ID, "attempt", domain.HoldFor); err != nil || !ok {
		t.Fatalf("the hold: %v %v", ok, err)
	}
	calls := w.store.Calls()
	for _, pw := range []string{"not her password", password} {
		current := pw
		err := w.svc.ChangePassword(ctx, p, ann.ID, accounts.Proof{CurrentPassword: &current}, "a new horse battery staple")
		if !errors.Is(err, domain.ErrHeldForModeration) {
			t.Errorf("a password change (current %q) while held: %v, want 409 held for moderation", pw, err)
		}
	}
	if n := w.store.Calls() - calls; n != 2 {
		t.Errorf("the held changes made %d store calls, want their reads of the account alone (2)", n)
	}
	w.store.Advance(domain.HoldFor + time.Second)
	current := password
	if err := w.svc.ChangePassword(ctx, p, ann.ID, accounts.Proof{CurrentPassword: &current}, "a new horse battery staple"); err != nil {
		t.Errorf("past the hold: %v", err)
	}
}

// rootAndMember signs up root, made an admin, and member (w.created[1]):
// root's account.
func (w *world) rootAndMember(t *testing.T) domain.User {
	t.Helper()
	for _, name := range []string{"root", "member"} {
		if err := w.signup(name, name+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	root, err := w.svc.SetAdmin(context.Background(), "root", true)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// signedIn logs name in with the world's password: the session's
// principal.
func (w *world) signedIn(t *testing.T, name string) domain.Principal {
	t.Helper()
	ctx := context.Background()
	r, err := w.svc.Login(ctx, name, password, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.svc.Authenticate(ctx, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
