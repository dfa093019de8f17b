package faults

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// skew is how far the clock of the second instance of a sessions world
// runs ahead: its sightings carry timestamps later than the revocations
// the first instance writes.
const skew = 5 * time.Second

// sessWorld is a user with three sessions (keeper, victim, other), an
// admin, and two instances of the accounts service on the same tables:
// here, on the store's clock, and ahead, whose clock (and so whose write
// timestamps) runs skew ahead. Both record a sighting on every request,
// inside it (no goroutine: every store call is the schedule's).
type sessWorld struct {
	*world
	ahead  *accounts.Service
	user   domain.User
	admin  domain.Principal
	tokens map[string]string // keeper, victim, other
	keeper domain.Principal
}

func newSessWorld(t *testing.T) *sessWorld {
	t.Helper()
	w := newWorld()
	// Every request records its sighting, inside the request.
	cfg := accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: 0, Now: w.store.Now, ClaimYield: &yield, Background: atOnce}
	w.svc = accounts.New(cfg, w.store.Claims(), w.store.Users(), w.store.Sessions(), plainHasher{}, nopLog{})
	cfg.Now = func() time.Time { return w.store.Now().Add(skew) }
	ahead := accounts.New(cfg, w.store.Claims(), w.store.Users(), w.store.SessionsAhead(skew), plainHasher{}, nopLog{})
	s := &sessWorld{world: w, ahead: ahead, tokens: map[string]string{}}
	ctx := context.Background()
	if err := w.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	root, err := w.svc.SetAdmin(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	s.admin = domain.Principal{UserID: root.ID}
	if err := w.signup("sam", "sam@example.org"); err != nil {
		t.Fatal(err)
	}
	s.user = w.created[1]
	for _, name := range []string{"keeper", "victim", "other"} {
		r, err := w.svc.Login(ctx, "sam", password, accounts.Client{UserAgent: name})
		if err != nil {
			t.Fatal(err)
		}
		s.tokens[name] = r.Token
		w.store.Advance(time.Millisecond)
	}
	if s.keeper, err = w.svc.Authenticate(ctx, s.tokens["keeper"]); err != nil {
		t.Fatal(err)
	}
	return s
}

// id is the public id of a named session.
func (s *sessWorld) id(name string) string {
	return domain.SessionID(accounts.HashToken(s.tokens[name]))
}

// sessOperation is one thing a client does to sessions; run and retry
// answer as the client sees it.
type sessOperation struct {
	name string
	// revoked are the sessions it ends; keeperKept and otherAlive say
	// whether the keeper's and the third session stay.
	revoked                []string
	keeperKept, otherAlive bool
	run, retry             func(s *sessWorld) error
}

// revokeVictim ends the victim by its id as the keeper; already gone
// (404) is what the client wanted.
func revokeVictim(s *sessWorld) error {
	err := s.svc.RevokeSession(context.Background(), s.keeper, s.user.ID, s.id("victim"))
	if errors.Is(err, accounts.ErrSessionNotFound) {
		return nil
	}
	return err
}

// seeVictimThenRevoke is a request of the victim's (whose sighting is
// written by svc), then the keeper revoking it.
func seeVictimThenRevoke(svc func(s *sessWorld) *accounts.Service) func(s *sessWorld) error {
	return func(s *sessWorld) error {
		_, _ = svc(s).Authenticate(context.Background(), s.tokens["victim"])
		return revokeVictim(s)
	}
}

var sessOperations = []sessOperation{
	{name: "revoke-one", revoked: []string{"victim"}, keeperKept: true, otherAlive: true, run: revokeVictim, retry: revokeVictim},
	{name: "revoke-others", revoked: []string{"victim", "other"}, keeperKept: true,
		run: func(s *sessWorld) error {
			return s.svc.RevokeSessions(context.Background(), s.keeper, s.user.ID, true)
		},
		retry: func(s *sessWorld) error {
			return s.svc.RevokeSessions(context.Background(), s.keeper, s.user.ID, true)
		}},
	{name: "admin-revokes-all", revoked: []string{"keeper", "victim", "other"},
		run: func(s *sessWorld) error {
			return s.svc.RevokeSessions(context.Background(), s.admin, s.user.ID, false)
		},
		retry: func(s *sessWorld) error {
			return s.svc.RevokeSessions(context.Background(), s.admin, s.user.ID, false)
		}},
	{name: "seen-then-revoked", revoked: []string{"victim"}, keeperKept: true, otherAlive: true,
		run: seeVictimThenRevoke(func(s *sessWorld) *accounts.Service { return s.svc }), retry: revokeVictim},
	{name: "seen-ahead-then-revoked", revoked: []string{"victim"}, keeperKept: true, otherAlive: true,
		run: seeVictimThenRevoke(func(s *sessWorld) *accounts.Service { return s.ahead }), retry: revokeVictim},
}

// sessAfters are what happens between the faulted operation's answer and
// the landing of its held writes: nothing, or the victim seen by the
// instance whose clock runs ahead (a sighting at a timestamp later than
// any delete of the operation).
var sessAfters = []string{"land-now", "seen-ahead-first"}

// TestExploreSessions runs every session operation with every fault at
// every store call, then the after, the held writes landing and the
// client's retry, and checks: a session the operation ended (once it, or
// its retry, answered success) never works again, on either instance, and
// is never listed; the sessions it leaves keep working; and the list shows
// exactly the sessions that work.
func TestExploreSessions(t *testing.T) {
	t.Parallel()
	total := 0
	for _, op := range sessOperations {
		probe := newSessWorld(t)
		calls := callsOf(t, probe.store, op.name, func() error { return op.run(probe) })
		total += everySchedule(t, op.name, calls, sessAfters, func(name string, k int, fault memstore.Fault, a int) {
			exploreSessions(t, name, op, map[int]memstore.Fault{k: fault}, sessAfters[a])
		})
	}
	t.Logf("%d schedules in all", total)
}

func exploreSessions(t *testing.T, name string, op sessOperation, faults map[int]memstore.Fault, after string) {
	s := newSessWorld(t)
	start := s.store.Calls()
	s.store.FaultAt = func(n int, _ string) memstore.Fault { return faults[n-start] }
	err := op.run(s)
	s.store.FaultAt = nil
	s.store.Recover()
	if err != nil && !expected(err) {
		t.Errorf("%s: the operation answered %v", name, err)
	}
	if after == "seen-ahead-first" {
		_, _ = s.ahead.Authenticate(context.Background(), s.tokens["victim"])
	}
	s.store.Land()
	if err != nil {
		if err = op.retry(s); err != nil {
			t.Errorf("%s: the retry answered %v", name, err)
		}
	}
	ctx := context.Background()
	works := map[string]bool{}
	for session, token := range s.tokens {
		_, errHere := s.svc.Authenticate(ctx, token)
		_, errAhead := s.ahead.Authenticate(ctx, token)
		if (errHere == nil) != (errAhead == nil) {
			t.Errorf("%s: the %s session works on one instance and not the other: %v, %v", name, session, errHere, errAhead)
		}
		works[session] = errHere == nil
		for _, e := range []error{errHere, errAhead} {
			if e != nil && !errors.Is(e, domain.ErrNoSession) {
				t.Errorf("%s: authenticating the %s session: %v", name, session, e)
			}
		}
	}
	for _, session := range op.revoked {
		if works[session] && err == nil {
			t.Errorf("%s: the %s session works after its revocation answered success", name, session)
		}
	}
	if works["keeper"] != op.keeperKept || works["other"] != op.otherAlive {
		t.Errorf("%s: sessions left working: %v (keeper kept %v, other %v)", name, works, op.keeperKept, op.otherAlive)
	}
	page, lerr := s.svc.ListSessions(ctx, s.admin, s.user.ID, "", 100)
	if lerr != nil {
		t.Fatalf("%s: listing: %v", name, lerr)
	}
	var listed, working []string
	for _, v := range page.Items {
		listed = append(listed, v.ID())
	}
	for session, ok := range works {
		if ok {
			working = append(working, s.id(session))
		}
	}
	slices.Sort(listed)
	slices.Sort(working)
	if !slices.Equal(listed, working) {
		t.Errorf("%s: listed %v, working %v (%v)", name, listed, working, works)
	}
}
