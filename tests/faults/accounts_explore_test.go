// Package faults explores the domain's protocols against every fault at
// every store call, on in-memory stores that follow the store contracts
// (tests/memstore), without a database: each schedule runs one
// operation with one fault (memstore.Faults: fail before applying, lose
// the answer after applying, land late, crash, every lease run out, a
// slow call) at one of its calls, lets a competing operation run, lands
// what was held back, lets the leases run out, lets the client retry, and
// then checks the invariants of docs/design/invariants.md. The
// database tests (tests/e2e, repository) prove that the real stores keep
// the contracts the fakes follow.
package faults

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/lifecycle"
	"shelf/tests/memstore"
)

const lease = 30 * time.Second

type plainHasher struct{}

func (plainHasher) Hash(_ context.Context, pw string) (string, error) { return "plain:" + pw, nil }
func (plainHasher) Verify(_ context.Context, pw, phc string) (bool, bool, error) {
	return phc == "plain:"+pw, false, nil
}
func (plainHasher) Burn(context.Context, string) error { return nil }

type nopLog struct{}

func (nopLog) Warn(context.Context, string, ...string) {}

// world is one schedule's service on fresh tables.
type world struct {
	store *memstore.Store
	svc   *accounts.Service
	// cfg and rows are what svc was built with (rewire).
	cfg  accounts.Config
	rows accounts.UserStore
	// life deletes accounts and closes groups (wireDeletion, newCloseWorld).
	life *lifecycle.Service
	// created are the accounts whose signup answered success.
	created []domain.User
	// passwords are the current password of each account (by id).
	passwords map[string]string
	// token is the session a login opened.
	token string
	// mail is what the service mailed, once it mails (mailing).
	mail *recorder
}

// atOnce is the explorer's runner of the work a call leaves for after its
// answer (the services' Config.Background): inside the call, so that
// each schedule has one call order.
func atOnce(f func()) { f() }

// yield is the claimer's wait for a split pair (ordered yielding): its
// tries are store calls like any other, explored under every fault, but
// its pauses are real time while the store's clock stands still, so they
// are kept to a few milliseconds.
var yield = domain.Yield{Tries: 2, Budget: 4 * time.Millisecond}

func newWorld() *world {
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	// Sightings are TestExploreSessions's: here a session's requests
	// record none (the interval is longer than any schedule), and one
	// would run inside its request, as a call of the schedule.
	w := &world{store: st, passwords: map[string]string{}, rows: accountRows(st),
		cfg: accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now, ClaimYield: &yield, Background: atOnce}}
	w.svc = accounts.New(w.cfg, st.Claims(), w.rows, st.Sessions(), plainHasher{}, nopLog{})
	return w
}

// rewire builds the world's accounts service again on the same store,
// its config changed by change (what a test turns on after its setup:
// mail, the audit, a limit), with the same hooks. A service keeps nothing
// between calls that the store does not, so the new one carries on where
// the old one stood; services built on the old one (moderation's admins)
// read through it as before.
func (w *world) rewire(change func(st *memstore.Store, c *accounts.Config)) {
	change(w.store, &w.cfg)
	hooks := w.svc.Hooks
	w.svc = accounts.New(w.cfg, w.store.Claims(), w.rows, w.store.Sessions(), plainHasher{}, nopLog{})
	w.svc.Hooks = hooks
}

const password = "correct horse battery"

func (w *world) signup(username, email string) error {
	u, err := w.svc.Signup(context.Background(), accounts.SignupInput{Username: username, Email: email, Password: password})
	if err == nil {
		w.created = append(w.created, u)
		w.passwords[u.ID] = password
	}
	return err
}

// signupAll signs up each of names (its address name@example.org), in
// turn, and answers their accounts.
func (w *world) signupAll(t *testing.T, names ...string) []domain.User {
	t.Helper()
	for _, n := range names {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	return w.created[len(w.created)-len(names):]
}

// operation is one thing a client does, with the set-up it needs (run
// without faults) and how the client retries it after an error.
type operation struct {
	name  string
	setup func(w *world) error
	run   func(w *world) error
	retry func(w *world) error
	// keys are the usernames and emails the operation touches; a
	// competitor races for them.
	username, email string
	// verify, when set, checks the operation's effect once it (or the
	// client's retry) answered success.
	verify func(w *world) error
}

func me(w *world) domain.User { return w.created[0] }

// renamedHolding checks that the first account is named username and
// holds held, the name its owner's rename left.
func renamedHolding(w *world, username, held string) error {
	u, err := w.store.Users().GetSerial(context.Background(), me(w).ID)
	if err != nil || u.UsernameKey != username || u.HeldUsernameKey != held {
		return fmt.Errorf("a rename that answered success left the account %q holding %q (%v), want %q holding %q",
			u.UsernameKey, u.HeldUsernameKey, err, username, held)
	}
	return nil
}

func principal(u domain.User) domain.Principal { return domain.Principal{UserID: u.ID} }

var operations = []operation{
	{
		name: "signup", username: "alice", email: "alice@example.org",
		run:   func(w *world) error { return w.signup("alice", "alice@example.org") },
		retry: func(w *world) error { return w.signup("alice", "alice@example.org") },
	},
	{
		name: "signup-taken", username: "alice", email: "carol@example.org",
		setup: func(w *world) error { return w.signup("alice", "alice@example.org") },
		run:   func(w *world) error { return w.signup("alice", "carol@example.org") },
		retry: func(w *world) error { return w.signup("carol", "carol@example.org") },
	},
	{
		// A signup stopped after its claims holds the email pending: this
		// one holds the username, tries the email again while it waits
		// (ordered yielding), and answers 409; the client tries again once
		// the stopped signup's lease has run out.
		name: "signup-split", username: "alice", email: "alice@example.org",
		setup: func(w *world) error { return stoppedSignup(w, "zed", "alice@example.org") },
		run:   func(w *world) error { return w.signup("alice", "alice@example.org") },
		retry: func(w *world) error { return w.signup("alice", "alice@example.org") },
	},
	{
		// A rename that answered, or whose retry did, holds the name it
		// left, whichever attempt landed.
		name: "rename", username: "bobby", email: "bob@example.org",
		setup:  func(w *world) error { return w.signup("bob", "bob@example.org") },
		run:    func(w *world) error { return rename(w, "bobby", "") },
		retry:  func(w *world) error { return rename(w, "bobby", "") },
		verify: func(w *world) error { return renamedHolding(w, "bobby", "bob") },
	},
	{
		// A new username and a new address in one change: a retry that
		// finds one taken must not keep the other from everyone.
		name: "rename-and-email", username: "robert", email: "robert@example.org",
		setup: func(w *world) error {
			mailing(w)
			return w.signup("bob", "bob@example.org")
		},
		run:    func(w *world) error { return rename(w, "robert", "robert@example.org") },
		retry:  func(w *world) error { return rename(w, "robert", "robert@example.org") },
		verify: func(w *world) error { return renamedHolding(w, "robert", "bob") },
	},
	{
		// An email change goes through its confirmation: the service
		// mails, and the change is asked for and confirmed with the
		// token mailed to the new address.
		name: "change-email", username: "bob", email: "robert@example.org",
		setup: func(w *world) error {
			mailing(w)
			return w.signup("bob", "bob@example.org")
		},
		run:   func(w *world) error { return changeEmailConfirmed(w, "robert@example.org") },
		retry: func(w *world) error { return changeEmailConfirmed(w, "robert@example.org") },
		verify: func(w *world) error {
			u, err := w.store.Users().Get(context.Background(), me(w).ID)
			if err != nil || u.Email != "robert@example.org" || u.PendingEmail != "" || u.RecoveryEmail != "bob@example.org" {
				return fmt.Errorf("a confirmed email change left the account %+v (%v)", u, err)
			}
			return nil
		},
	},
	{
		name: "change-password", username: "dan", email: "dan@example.org",
		setup: func(w *world) error { return w.signup("dan", "dan@example.org") },
		run:   func(w *world) error { return changePassword(w) },
		retry: func(w *world) error { return changePassword(w) },
	},
	{
		name: "login", username: "erin", email: "erin@example.org",
		setup: func(w *world) error { return w.signup("erin", "erin@example.org") },
		run:   func(w *world) error { return login(w, "erin@example.org") },
		retry: func(w *world) error { return login(w, "erin") },
		verify: func(w *world) error {
			if p, err := w.svc.Authenticate(context.Background(), w.token); err != nil || p.UserID != me(w).ID {
				return fmt.Errorf("the session of a login that answered success does not work: %v", err)
			}
			return nil
		},
	},
	{
		name: "logout", username: "fay", email: "fay@example.org",
		setup: func(w *world) error {
			if err := w.signup("fay", "fay@example.org"); err != nil {
				return err
			}
			return login(w, "fay")
		},
		run:   logout,
		retry: logout,
		verify: func(w *world) error {
			if _, err := w.svc.Authenticate(context.Background(), w.token); !errors.Is(err, domain.ErrNoSession) {
				return fmt.Errorf("a session still works after its logout answered success: %v", err)
			}
			return nil
		},
	},
}

// stoppedSignup leaves a signup stopped after its claims, as a crash
// would: its claims and its account stay pending until their lease runs
// out.
func stoppedSignup(w *world, username, email string) error {
	stopped := errors.New("stopped")
	w.svc.Hooks.AfterClaims = func() error { return stopped }
	defer func() { w.svc.Hooks.AfterClaims = nil }()
	if err := w.signup(username, email); err != stopped {
		return fmt.Errorf("the signup to stop answered %v", err)
	}
	return nil
}

// login opens a session for the first account and keeps its token.
func login(w *world, name string) error {
	r, err := w.svc.Login(context.Background(), name, w.passwords[me(w).ID], accounts.Client{})
	if err == nil {
		w.token = r.Token
	}
	return err
}

// logout ends the kept session; a session already gone is what the client
// wanted (the client would get 401).
func logout(w *world) error {
	p, err := w.svc.Authenticate(context.Background(), w.token)
	if errors.Is(err, domain.ErrNoSession) {
		return nil
	}
	if err != nil {
		return err
	}
	return w.svc.Logout(context.Background(), p)
}

func rename(w *world, username, email string) error {
	current := w.passwords[me(w).ID]
	in := accounts.UpdateInput{Proof: accounts.Proof{CurrentPassword: &current}}
	if username != "" {
		in.Username = &username
	}
	if email != "" {
		in.Email = &email
	}
	_, err := w.svc.UpdateUser(context.Background(), principal(me(w)), me(w).ID, in)
	return err
}

// mailing has w's service mail, into w.mail.
func mailing(w *world) {
	w.mail = &recorder{}
	w.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Mail = accounts.Mail{Tokens: st.Tokens(), Mailer: w.mail, PublicURL: "https://shelf.example.org",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour}
	})
}

// changeEmailConfirmed asks for email as the first account and confirms
// it with the last token mailed there, as its owner does; a token already
// used is an earlier attempt's confirmation, done.
func changeEmailConfirmed(w *world, email string) error {
	if err := rename(w, "", email); err != nil {
		return err
	}
	ctx := context.Background()
	err := w.svc.ConfirmEmail(ctx, w.mail.tokenTo("verify", email))
	// The link's mail failed after the answer (logged: no mail came, or
	// its token was not stored): the owner asks for another, and again if
	// a fault took that one too (a schedule holds at most two).
	for tries := 0; tries < 2 && errors.Is(err, accounts.ErrTokenUnknown); tries++ {
		if err := w.svc.RequestVerification(ctx, domain.Principal{}, email); err != nil {
			return err
		}
		err = w.svc.ConfirmEmail(ctx, w.mail.tokenTo("verify", email))
	}
	if w.store.Crashed() {
		// The process died on the way (its mail job with it): the owner
		// got no answer, and the retry, on a new process, goes on.
		return fmt.Errorf("the process died: %w", domain.ErrUnavailable)
	}
	return usedIsDone(err)
}

func changePassword(w *world) error {
	u := me(w)
	err := w.svc.ChangePassword(context.Background(), principal(u), u.ID, accounts.Password(w.passwords[u.ID]), "a brand new secret")
	// Any answer but success may hide a change that applied (a crash
	// after the write, a failure after it): the check logs in with
	// whichever password works.
	w.passwords[u.ID+"/next"] = "a brand new secret"
	if err == nil {
		w.passwords[u.ID] = "a brand new secret"
	}
	return err
}

// after is what happens once the faulted operation answered.
type after struct {
	name string
	// competitor races a signup for the operation's names before held
	// writes land.
	competitor bool
	// otherChange changes the account's display name before held writes
	// land: the version moves under them.
	otherChange bool
	// staleName lets domain.StaleClaimAge pass, then a signup takes the
	// operation's username alone (fencing the account if a stopped change
	// of it committed the name), before held writes land.
	staleName bool
}

var afters = []after{{name: "land-now"}, {name: "competitor-first", competitor: true}, {name: "other-change-first", otherChange: true},
	{name: "name-taken-past-stale", staleName: true}}

// TestExploreAccounts runs every schedule of every accounts operation and
// checks U1-U4 after each.
func TestExploreAccounts(t *testing.T) {
	t.Parallel()
	total := 0
	for _, op := range operations {
		calls := countCalls(t, op)
		n := 0
		for k := 0; k < calls; k++ {
			for _, fault := range memstore.Faults {
				for _, a := range afters {
					name := fmt.Sprintf("%s/call%d/%s/%s", op.name, k, fault, a.name)
					explore(t, name, op, k, fault, a)
					n++
				}
			}
		}
		t.Logf("%s: %d store calls, %d schedules", op.name, calls, n)
		total += n
	}
	t.Logf("%d schedules in all", total)
}

// countCalls runs op without faults and counts its store calls.
func countCalls(t *testing.T, op operation) int {
	t.Helper()
	w := newWorld()
	if op.setup != nil {
		if err := op.setup(w); err != nil {
			t.Fatalf("%s: set-up: %v", op.name, err)
		}
	}
	before := w.store.Calls()
	_ = op.run(w)
	return w.store.Calls() - before
}

func explore(t *testing.T, name string, op operation, k int, fault memstore.Fault, a after) {
	exploreWith(t, name, op, map[int]memstore.Fault{k: fault}, a)
}

// exploreWith runs op with faults at the given calls (counted from the
// operation's first), then the after, the lease, the client's retry, and
// the checks.
func exploreWith(t *testing.T, name string, op operation, faults map[int]memstore.Fault, a after) {
	w := newWorld()
	if op.setup != nil {
		if err := op.setup(w); err != nil {
			t.Fatalf("%s: set-up: %v", name, err)
		}
	}
	start := w.store.Calls()
	w.store.FaultAt = func(n int, _ string) memstore.Fault {
		return faults[n-start] // None when absent
	}
	err := op.run(w)
	w.store.FaultAt = nil
	w.store.Recover()
	if err != nil && !expected(err) {
		t.Errorf("%s: the operation answered %v", name, err)
	}
	if a.competitor {
		_ = w.signup(op.username, "rival-"+op.email)
		_ = w.signup("rival", op.email)
	}
	if a.staleName {
		w.store.Advance(domain.StaleClaimAge)
		_ = newProbe(w).signup(op.username, "rival-stale@example.org")
	}
	if a.otherChange && len(w.created) > 0 {
		display := "Someone Else"
		_, _ = w.svc.UpdateUser(context.Background(), principal(me(w)), me(w).ID, accounts.UpdateInput{DisplayName: &display})
	}
	w.store.Land()
	w.store.Advance(lease + time.Second)
	if err != nil {
		err = op.retry(w) // the client tries again
	}
	check(t, name, w, op)
	if op.verify != nil && err == nil {
		if verr := op.verify(w); verr != nil {
			t.Errorf("%s: %v", name, verr)
		}
	}
}

// expected reports the answers a fault may legitimately cause: "try
// again" (503, outcome unknown included) and the conflicts of a race.
func expected(err error) bool {
	return errors.Is(err, domain.ErrUnavailable) || errors.Is(err, domain.ErrConflict)
}

// check asserts the accounts' invariants on the tables and through the
// service.
func check(t *testing.T, name string, w *world, op operation) {
	t.Helper()
	holders, byKey, users := checkHeld(t, name, w)
	checkEmailHolds(t, name, holders, byKey, users)
	// U3: every signup that answered success logs in by both names, with
	// its current password.
	ctx := context.Background()
	for _, created := range w.created {
		u, err := w.store.Users().Get(ctx, created.ID)
		if err != nil || u.Status != domain.StatusActive {
			t.Errorf("%s: U3: signup %s answered success, but the account is %+v (%v)", name, created.ID, u, err)
			continue
		}
		for _, login := range []string{u.Username, u.Email} {
			if !canLogin(w, login, u.ID) {
				t.Errorf("%s: U3: %s cannot log in as %q", name, u.ID, login)
			}
		}
	}
	checkFree(t, name, w, holders, byKey, users,
		[]string{"username/" + op.username, "email/" + op.email, "username/alice", "username/bob", "email/bob@example.org"})
}

// checkEmailHolds asserts U1 for the addresses an email change holds
// beside the account's own (docs/design/email-change.md): the one asked
// for, until it is confirmed, and the one a confirmation replaced, until
// its revert link ends (no schedule here lasts that long). Each is
// committed to the account and held by no other; holders gets them, so
// that U4 does not take them for free.
func checkEmailHolds(t *testing.T, name string, holders map[string]string, byKey map[string]domain.Claim, users []domain.User) {
	t.Helper()
	for _, u := range users {
		if !u.Visible() {
			continue
		}
		for _, held := range []string{u.PendingEmailKey, u.RecoveryEmailKey} {
			if held == "" {
				continue
			}
			key := "email/" + held
			if other, ok := holders[key]; ok && other != u.ID {
				t.Errorf("%s: U1: %s is held by %s and %s", name, key, other, u.ID)
			}
			holders[key] = u.ID
			if c, ok := byKey[key]; !ok || c.Owner != u.ID || c.State != domain.ClaimCommitted {
				t.Errorf("%s: U1: %s holds %s (an email change's), whose claim is %+v", name, u.ID, key, c)
			}
		}
	}
}

// checkHeld asserts U1 on the tables: no key is held by two visible
// accounts, and every key a visible account holds is committed to it. It
// returns the holder of each held key, the live claims by key and the
// accounts.
func checkHeld(t *testing.T, name string, w *world) (holders map[string]string, byKey map[string]domain.Claim, users []domain.User) {
	t.Helper()
	claims, users := w.store.Snapshot()
	byKey = map[string]domain.Claim{}
	for _, c := range claims {
		byKey[string(c.Kind)+"/"+c.Key] = c
	}
	holders = map[string]string{}
	for _, u := range users {
		if !u.Visible() {
			continue
		}
		keys := []string{"username/" + u.UsernameKey, "email/" + u.EmailKey}
		if u.HeldUsernameKey != "" && w.store.Now().Before(u.HeldUsernameUntil) {
			// The name its owner's rename left, held for it.
			keys = append(keys, "username/"+u.HeldUsernameKey)
		}
		for _, key := range keys {
			if other, ok := holders[key]; ok {
				t.Errorf("%s: U1: %s is held by %s and %s", name, key, other, u.ID)
			}
			holders[key] = u.ID
			// An account only ever holds keys committed to it: else the
			// claim could expire or be taken, and the key held twice.
			if c, ok := byKey[key]; !ok || c.Owner != u.ID || c.State != domain.ClaimCommitted {
				t.Errorf("%s: U1: %s holds %s, whose claim is %+v", name, u.ID, key, c)
			}
		}
	}
	return holders, byKey, users
}

// checkFree asserts U4: no name stays blocked once the leases have run
// out: every one of keys ("username/x", "email/y") that no account holds
// can be signed up for. The probes sign up on w's tables, so this runs
// last.
func checkFree(t *testing.T, name string, w *world, holders map[string]string, byKey map[string]domain.Claim, users []domain.User, keys []string) {
	t.Helper()
	probed := map[string]bool{}
	for i, key := range keys {
		if _, held := holders[key]; held || probed[key] {
			continue
		}
		probed[key] = true
		kind, value, _ := strings.Cut(key, "/")
		username, email := fmt.Sprintf("fresh%d", i), fmt.Sprintf("fresh%d@example.org", i)
		if kind == "username" {
			username = value
		} else {
			email = value
		}
		probe := newProbe(w)
		if err := probe.signup(username, email); err != nil {
			t.Errorf("%s: U4: %s is held by no account, yet a signup for it answers %v; its claim %+v; accounts %+v",
				name, key, err, byKey[key], users)
		}
	}
}

// canLogin logs in as login with any password the account may have.
func canLogin(w *world, login, id string) bool {
	for _, pw := range []string{w.passwords[id], w.passwords[id+"/next"]} {
		if pw == "" {
			continue
		}
		if res, err := w.svc.Login(context.Background(), login, pw, accounts.Client{}); err == nil && res.User.ID == id {
			return true
		}
	}
	return false
}

// newProbe is a world on a copy-free view of w's tables: a signup there
// changes w's tables, so it runs last.
func newProbe(w *world) *world {
	return &world{store: w.store, svc: w.svc, passwords: map[string]string{}}
}

// rounds is how many random schedules TestExploreAccountsRandom runs:
// a few hundred in make test, many more under make fuzz.
var rounds = flag.Int("explore.rounds", 300, "random fault schedules to run")

// TestExploreAccountsRandom runs schedules with two faults each (one when
// both fall on the same call), at random calls of a random operation,
// followed by a random after. The seed is logged; -explore.seed replays
// one.
func TestExploreAccountsRandom(t *testing.T) {
	t.Parallel()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -explore.seed=%d), %d rounds", seed, seed, *rounds)
	rng := rand.New(rand.NewPCG(seed, 0))
	for i := 0; i < *rounds; i++ {
		op := operations[rng.IntN(len(operations))]
		calls := countCalls(t, op)
		faults := map[int]memstore.Fault{
			rng.IntN(calls): memstore.Faults[rng.IntN(len(memstore.Faults))],
			rng.IntN(calls): memstore.Faults[rng.IntN(len(memstore.Faults))],
		}
		a := afters[rng.IntN(len(afters))]
		name := fmt.Sprintf("random %d: %s %v %s", i, op.name, faults, a.name)
		exploreWith(t, name, op, faults, a)
	}
}

var seedFlag = flag.Uint64("explore.seed", 0, "seed of TestExploreAccountsRandom (0: from the clock)")

// TestRenameWhoseLeaseRanOutAndWhoseReleaseLandsLate: a rename's claim
// expires before its commit (Expire at the commit: a stalled process, a
// replica's clock ahead), the commit fails, the release of the claim is
// held back, and the next round of the same request claims, commits and
// takes the name. Then the held release lands. Each round is an operation
// of its own, so the late release, which names the first round's op,
// leaves the new round's committed claim alone: were the op shared, it
// would delete it and the account would hold a name with no claim (U1).
func TestRenameWhoseLeaseRanOutAndWhoseReleaseLandsLate(t *testing.T) {
	t.Parallel()
	var rename operation
	for _, op := range operations {
		if op.name == "rename" {
			rename = op
		}
	}
	exploreWith(t, "rename/expire-then-late-release", rename,
		map[int]memstore.Fault{2: memstore.Expire, 3: memstore.LandLate}, afters[0])
}
