// Package broken holds the deliberately broken builds of the checkers'
// self-checks: stores, a repository.Sender and a serial rule that break a
// rule on purpose, so that the nemesis (make test-nemesis-broken), the
// two-region run (make test-regions BROKEN=local-serial) and the fault
// explorer (go test -tags brokenclaims ./tests/faults) can show that they
// catch it. Three builds, each a main of its own under this folder that
// runs the api (internal/app's Main) with its app.Option:
//
//   - claims (Claims): an ambiguous answer is reported unknown at once,
//     never read back at SERIAL (Unsettled), and an activation (signup,
//     group creation) or account update whose outcome is unknown is taken
//     for "not applied" (Users, Groups), so the service releases its
//     claims, although the write may have applied or may still land;
//   - lwt (LWT): a claim is taken by reading the key and, when nobody
//     holds it, writing it with a plain INSERT, and committed with a plain
//     UPDATE, no compare-and-set (CheckThenAct): two claimants racing for
//     a key both win;
//   - localserial (LocalSerial): every compare-and-set and SERIAL read at
//     LOCAL_SERIAL, whatever the keyspace and SHELF_SERIAL_CONSISTENCY say.
//
// They wrap the composition root from outside: cmd/api imports nothing of
// the proof wing (architecture_test.go, TestShippedCodeLinksNoProof).
package broken

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/internal/app"
	"shelf/internal/config"
	"shelf/repository"
)

// Claims is the claims build (app.WithStores): db's ambiguous answers
// unread, and writes of unknown outcome taken for "not applied".
func Claims(db *repository.DB, s app.Stores) app.Stores {
	db.Decorate(Unsettled)
	s.Users = Users{s.Users}
	s.Groups = Groups{s.Groups}
	return s
}

// LWT is the lwt build (app.WithStores): claims by check-then-act.
func LWT(db *repository.DB, s app.Stores) app.Stores {
	s.Claims = CheckThenAct{ClaimStore: s.Claims, db: db}
	return s
}

// Users takes an account write of unknown outcome for "not applied": the
// accounts service then releases the claims it took for it (a signup
// undoes itself, a rename or an email change gives its new names back,
// both answering 503 as before), although the write may have applied or
// may still land.
type Users struct{ accounts.UserStore }

// Activate is the store's, an unknown outcome answered "not applied".
func (u Users) Activate(ctx context.Context, user domain.User, tag string) (bool, error) {
	return guess(u.UserStore.Activate(ctx, user, tag))
}

// Update is the store's, an unknown outcome answered "not sent".
func (u Users) Update(ctx context.Context, user domain.User) (bool, error) {
	applied, err := u.UserStore.Update(ctx, user)
	if errors.Is(err, domain.ErrOutcomeUnknown) {
		return false, fmt.Errorf("users.update: taken for not sent: %w", domain.ErrUnavailable)
	}
	return applied, err
}

// Groups takes a group's activation of unknown outcome for "not applied":
// the creation then releases its name, although the group may be active.
type Groups struct{ groups.Store }

// Activate is the store's, an unknown outcome answered "not applied".
func (g Groups) Activate(ctx context.Context, group groups.Group, tag string) (bool, error) {
	return guess(g.Store.Activate(ctx, group, tag))
}

// guess is the bug: an outcome nobody knows, answered "not applied" (an
// activation: the creation then undoes itself and answers 503).
func guess(applied bool, err error) (bool, error) {
	if errors.Is(err, domain.ErrOutcomeUnknown) {
		return false, nil
	}
	return applied, err
}

// Unsettled decorates a repository.Sender: an attempt of a lightweight
// transaction whose answer is ambiguous is reported unknown at once
// (domain.ErrOutcomeUnknown), and the DB, which reads an ambiguous answer
// back at SERIAL, never sees it as ambiguous.
func Unsettled(next repository.Sender) repository.Sender { return unsettled{next} }

type unsettled struct{ repository.Sender }

func (u unsettled) Begin(name string) repository.Transaction {
	return unsettledTx{Transaction: u.Sender.Begin(name), name: name}
}

type unsettledTx struct {
	repository.Transaction
	name string
}

func (tx unsettledTx) Attempt(ctx context.Context, run func(context.Context) (bool, error)) (bool, error) {
	applied, err := tx.Transaction.Attempt(ctx, run)
	if err != nil && repository.Ambiguous(err) {
		// The cause as text only: wrapped, it would still be ambiguous.
		return false, fmt.Errorf("%s: %w: %w (unread: %s)", tx.name, domain.ErrOutcomeUnknown, domain.ErrUnavailable, err)
	}
	return applied, err
}

// CheckThenAct takes and commits claims without a compare-and-set: Claim
// reads the key and, when nobody holds it, writes it with a plain INSERT;
// Commit is a plain UPDATE. The rest is the store's.
type CheckThenAct struct {
	domain.ClaimStore
	db *repository.DB
}

// claimTables are the claim tables by kind (repository/claims.go's).
var claimTables = map[domain.ClaimKind]string{
	domain.KindUsername:  "usernames",
	domain.KindEmail:     "emails",
	domain.KindGroupName: "group_names",
}

// The claim statements of repository/claims.go without their conditions.
const (
	plainClaimCQL  = `INSERT INTO %s (key, user_id, op, state, claimed_at, base_version) VALUES (?, ?, ?, 'pending', ?, ?) USING TTL ?`
	plainCommitCQL = `UPDATE %s USING TTL 0 SET user_id = ?, op = ?, state = 'committed', claimed_at = ?, base_version = ? WHERE key = ?`
)

// Claim reads the key and writes it when nobody holds it.
func (c CheckThenAct) Claim(ctx context.Context, kind domain.ClaimKind, key, owner, op string, base int, lease time.Duration) (domain.Claim, error) {
	existing, err := c.ClaimStore.Lookup(ctx, kind, key)
	switch {
	case err == nil:
		return existing, nil
	case !errors.Is(err, domain.ErrNotFound):
		return domain.Claim{}, err
	}
	now := c.db.Now().UTC()
	ttl := max(int(lease/time.Second), 1)
	if err := c.send(ctx, kind, "claim", plainClaimCQL, key, owner, op, now, base, ttl); err != nil {
		return domain.Claim{}, err
	}
	return domain.Claim{Kind: kind, Key: key, Owner: owner, Op: op, State: domain.ClaimPending, BaseVersion: base}, nil
}

// Commit writes the claim committed, whoever holds it.
func (c CheckThenAct) Commit(ctx context.Context, kind domain.ClaimKind, key, owner, op string, base int) (bool, error) {
	return true, c.send(ctx, kind, "commit", plainCommitCQL, owner, op, c.db.Now().UTC(), base, key)
}

// send runs one plain write on the claim table of kind, never sent twice
// (a write without its condition must not run again on its own).
func (c CheckThenAct) send(ctx context.Context, kind domain.ClaimKind, op, stmt string, args ...any) error {
	t := claimTables[kind]
	q := c.db.Session.Session.Query(fmt.Sprintf(stmt, t), args...).WithContext(ctx).Idempotent(false).RetryPolicy(nil)
	if err := q.Exec(); err != nil {
		return fmt.Errorf("%s.%s: %w: %w", t, op, domain.ErrUnavailable, err)
	}
	return nil
}

// LocalSerial is the localserial build's rule (app.WithSerialRule): every
// compare-and-set and SERIAL read at LOCAL_SERIAL whatever the keyspace and
// SHELF_SERIAL_CONSISTENCY say. On a keyspace in two data centres each
// region then runs Paxos among its own replicas, and two signups of one
// username through the two regions can both win; the regions test builds
// it to show that its checker catches that (U1, U3). Every other setting
// is checked as the server checks it.
func LocalSerial(c config.Cassandra, keyspace string, replication map[string]string, clusterDCs []string, logger zerolog.Logger) (string, error) {
	c.SerialConsistency = "SERIAL"
	if _, err := c.CheckReplication(keyspace, replication, clusterDCs); err != nil {
		return "", err
	}
	logger.Warn().Msg("deliberately broken build (localserial): compare-and-sets run at LOCAL_SERIAL in every data centre")
	return "LOCAL_SERIAL", nil
}
