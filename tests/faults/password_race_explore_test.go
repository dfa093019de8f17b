package faults

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// recordedSessions is the session store with every session a login
// writes recorded, so that a check can read the sessions nobody holds
// the token of (a login whose answer was lost, a write landing late).
type recordedSessions struct {
	*memstore.Sessions
	mu      sync.Mutex
	written []domain.Session
}

func (r *recordedSessions) Create(ctx context.Context, s domain.Session) error {
	r.mu.Lock()
	r.written = append(r.written, s)
	r.mu.Unlock()
	return r.Sessions.Create(ctx, s)
}

func (r *recordedSessions) all() []domain.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]domain.Session(nil), r.written...)
}

// raceWorld is ann's account with two sessions (the first is hers, the
// one she changes her password from) and a reset link mailed to her; an
// attacker holds her old password. Every session written after the set-up
// is recorded.
type raceWorld struct {
	*mailWorld
	recorded *recordedSessions
	// attacker are the tokens of the attacker's logins that answered
	// success; late counts those that answered success after the reset
	// or the change had.
	attacker []string
	late     int
	// lateAllowed: the reset or the change ran inside the login's last
	// read, which answered the account as it stood before (as any answer
	// may arrive after a change it did not see): the login may answer
	// success, with a session that does not work.
	lateAllowed bool
	// resetOK and changeOK: the reset (to newPassword) or the change (to
	// otherPassword), or its retry, answered success.
	resetOK, changeOK bool
	// opened are the tokens of the sessions the reset answered with.
	opened []string
}

// resetAgent is the user agent of the reset's own sessions: opened with
// the new password, they are the ones that may carry its epoch.
const resetAgent = "the owner's reset"

func newRaceWorld(t *testing.T) *raceWorld {
	t.Helper()
	m := newMailWorld(t, true)
	rec := &recordedSessions{Sessions: m.store.Sessions()}
	svc := accounts.New(accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: m.store.Now, ClaimYield: &yield, Background: atOnce,
		Mail: accounts.Mail{Tokens: m.store.Tokens(), Mailer: m.box, PublicURL: "https://shelf.example.org",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour}},
		m.store.Claims(), m.store.Users(), rec, plainHasher{}, nopLog{})
	m.svc = svc
	return &raceWorld{mailWorld: m, recorded: rec}
}

// raceRequest is one of the racing requests: run is the request as the
// client sends it (a retry sends it again); each records its success.
type raceRequest struct {
	name string
	run  func(r *raceWorld) error
}

var (
	raceLogin = raceRequest{name: "login", run: func(r *raceWorld) error {
		res, err := r.svc.Login(context.Background(), "ann", password, accounts.Client{UserAgent: "attacker"})
		if err == nil {
			r.attacker = append(r.attacker, res.Token)
			if r.resetOK || r.changeOK {
				r.late++
			}
		}
		return err
	}}
	raceReset = raceRequest{name: "reset", run: func(r *raceWorld) error {
		res, err := r.svc.ResetPassword(context.Background(), r.reset, newPassword, accounts.Client{UserAgent: resetAgent})
		if err == nil && res.Token != "" {
			r.opened = append(r.opened, res.Token)
		}
		if err == nil || errors.Is(err, accounts.ErrTokenUsed) {
			// Used (by no other request here) means done: an attempt whose
			// answer was lost set the password and ended the sessions.
			r.resetOK = true
			return nil
		}
		return err
	}}
	raceChange = raceRequest{name: "change", run: func(r *raceWorld) error {
		ctx := context.Background()
		p, err := r.svc.Authenticate(ctx, r.sessions[0])
		if err != nil {
			return err
		}
		if err := r.svc.ChangePassword(ctx, p, r.ann.ID, accounts.Password(password), otherPassword); err != nil {
			return err
		}
		r.changeOK = true
		return nil
	}}
)

// passwordRaces are the pairs that race on ann's row: the first request
// is faulted, the second runs inside its slow call, or right after its
// answer.
var passwordRaces = [][2]raceRequest{
	{raceLogin, raceReset}, {raceReset, raceLogin},
	{raceLogin, raceChange}, {raceChange, raceLogin},
	{raceReset, raceChange}, {raceChange, raceReset},
}

// raceAnswer reports an answer a racing request may give: try again, a
// refused token (used), or a refused login or session (the password
// changed under it).
func raceAnswer(err error) bool {
	return err == nil || expected(err) || refused(err) || errors.Is(err, accounts.ErrInvalidCredentials) ||
		errors.Is(err, accounts.ErrWrongCurrentPassword) ||
		errors.Is(err, domain.ErrNoSession)
}

// TestExplorePasswordRaces runs two requests on ann's password at once (a
// login with the leaked old password and a reset, a login and a change, a
// reset and a change), with every fault at every store call of the first:
// the second runs inside the call when it is slow, right after the
// first's answer otherwise; then the held writes land, and both clients
// retry what did not answer success. Checked after the landing and again
// after the retries: once the password in force is not the old one, no
// session opened with the old password works, a login in flight or a
// session that landed late included, nor any other session from before
// but the one that changed it; the password in force is the one of the
// request that answered success, and no login with the old one answers
// success after that request did; the reset token works at most once.
func TestExplorePasswordRaces(t *testing.T) {
	t.Parallel()
	total := 0
	for _, pair := range passwordRaces {
		first, second := pair[0], pair[1]
		action := first.name + "-vs-" + second.name
		probe := newRaceWorld(t)
		calls := callsOf(t, probe.store, action, func() error { return first.run(probe) })
		total += everySchedule(t, action, calls, []string{"then-land-and-retry"}, func(name string, k int, fault memstore.Fault, _ int) {
			r := newRaceWorld(t)
			secondRan := false
			var secondErr error
			runSecond := func() {
				if !secondRan {
					secondRan = true
					secondErr = second.run(r)
				}
			}
			r.store.Meanwhile = runSecond
			r.lateAllowed = first.name == "login" && fault == memstore.Slow && k == calls-1
			faultOnce(r.store, k, fault)
			firstErr := first.run(r)
			recovered(r.store)
			r.store.Meanwhile = nil
			runSecond()
			for req, err := range map[string]error{first.name: firstErr, second.name: secondErr} {
				if !raceAnswer(err) {
					t.Errorf("%s: the %s answered %v", name, req, err)
				}
			}
			r.store.Land()
			checkPasswordRace(t, name+" (landed)", r, false)
			if firstErr != nil && !refused(firstErr) {
				firstErr = first.run(r)
			}
			if secondErr != nil && !refused(secondErr) {
				secondErr = second.run(r)
			}
			for req, err := range map[string]error{first.name: firstErr, second.name: secondErr} {
				if !raceAnswer(err) || expected(err) {
					t.Errorf("%s: the %s's retry answered %v", name, req, err)
				}
			}
			checkPasswordRace(t, name+" (retried)", r, true)
		})
	}
	t.Logf("%d schedules in all", total)
}

// resetSessions counts the sessions of a list that a reset opened.
func resetSessions(l []accounts.SessionView) int {
	n := 0
	for _, s := range l {
		if s.UserAgent == resetAgent {
			n++
		}
	}
	return n
}

// checkPasswordRace asserts what must hold of r's password and sessions;
// final adds what a client that retried until an answer can expect.
func checkPasswordRace(t *testing.T, name string, r *raceWorld, final bool) {
	t.Helper()
	ctx := context.Background()
	u, err := r.store.Users().Get(ctx, r.ann.ID)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	current := strings.TrimPrefix(u.PasswordHash, "plain:")
	// A change of the password leaves the reset link working (only a
	// recovery makes it stale), so both may apply, the change first; a
	// change never applies after the reset (the reset ended its session
	// and moved the epoch its check of the password read).
	reset := false
	for _, c := range r.store.Changes(r.ann.ID) {
		switch strings.TrimPrefix(c.PasswordHash, "plain:") {
		case newPassword:
			reset = true
		case otherPassword:
			if reset {
				t.Errorf("%s: the change set its password after the reset had", name)
			}
		}
	}
	switch {
	case r.resetOK && current != newPassword:
		t.Errorf("%s: the reset answered success and the password is %q", name, current)
	case r.changeOK && !r.resetOK && current != otherPassword:
		t.Errorf("%s: the change answered success and the password is %q", name, current)
	case r.late > 0 && !r.lateAllowed:
		t.Errorf("%s: a login with the old password answered success after the password's change had", name)
	}
	if current == password {
		return
	}
	works := func(token string) bool {
		_, err := r.svc.Authenticate(ctx, token)
		if err != nil && !errors.Is(err, domain.ErrNoSession) {
			t.Errorf("%s: authenticating: %v", name, err)
		}
		return err == nil
	}
	for i, token := range r.attacker {
		if works(token) {
			t.Errorf("%s: the attacker's login %d, with the old password, works under the new one", name, i)
		}
	}
	// The session the reset answered with works: it was opened with the
	// password in force.
	for i, token := range r.opened {
		if !works(token) {
			t.Errorf("%s: session %d the reset answered with does not work", name, i)
		}
	}
	// Sessions nobody holds the token of (a login whose answer was lost,
	// a session write that landed late) must not work either: none opened
	// with the old password carries the password epoch now in force.
	for _, s := range r.recorded.all() {
		if s.UserAgent == resetAgent {
			continue // opened by the reset, under the new password
		}
		if got, err := r.store.Sessions().Get(ctx, s.TokenHash); err == nil && got.PasswordEpoch == u.PasswordEpoch {
			t.Errorf("%s: a session opened with the old password carries the new password's epoch: %+v", name, got)
		}
	}
	if works(r.sessions[1]) {
		t.Errorf("%s: a session from before the password changed works", name)
	}
	changer := works(r.sessions[0])
	switch {
	case changer && current != otherPassword:
		t.Errorf("%s: the owner's session works after the reset set %q", name, current)
	case !changer && r.changeOK && current == otherPassword:
		t.Errorf("%s: the session that changed the password stopped working", name)
	}
	if page, err := r.svc.ListSessions(ctx, principal(r.ann), r.ann.ID, "", 100); err != nil {
		t.Errorf("%s: listing: %v", name, err)
	} else if others := len(page.Items) - resetSessions(page.Items); others > 1 || (others == 1 && !changer) {
		t.Errorf("%s: the owner's list shows sessions that do not work: %d (the changer's works: %v)", name, others, changer)
	}
	if !final {
		return
	}
	if _, err := r.svc.Login(ctx, "ann", password, accounts.Client{}); err == nil {
		t.Errorf("%s: the old password logs in after it changed", name)
	}
	if _, err := r.svc.Login(ctx, "ann", current, accounts.Client{}); err != nil {
		t.Errorf("%s: the password in force does not log in: %v", name, err)
	}
	_, err = r.svc.ResetPassword(ctx, r.reset, "a third passphrase", accounts.Client{})
	switch {
	case r.resetOK && !refused(err):
		t.Errorf("%s: the reset token worked again with another password: %v", name, err)
	case !r.resetOK && err != nil:
		// Only a recovery makes a reset link stale: a change of the
		// password (a thief's, say) leaves the owner's link working.
		t.Errorf("%s: the reset link mailed before the change no longer works: %v", name, err)
	}
}
