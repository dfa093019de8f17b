package repository

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
	"github.com/scylladb/gocqlx/v2/migrate"

	"shelf/domain"
	"shelf/schema"
)

// Migrate applies the embedded schema files that the keyspace has not seen
// yet. It is idempotent: applied files are skipped (and checked against their
// checksum), and a file interrupted half-way resumes after its last applied
// statement.
//
// A statement that times out is tried again, up to migrateAttempts runs in
// all: schema changes wait for every node's agreement, which on a busy
// cluster (or a two-core machine running several test packages) can take
// longer than a statement's timeout. Trying again is safe: a run resumes
// after the last recorded statement, and every statement is IF NOT EXISTS.
func Migrate(ctx context.Context, session gocqlx.Session) error {
	setCalls.Do(func() { migrate.Callback = migrationCalls.Callback })
	for attempt := 1; ; attempt++ {
		err := migrate.FromFS(ctx, session, schema.FS)
		if err == nil {
			return nil
		}
		if !migrationTimedOut(err) || attempt == migrateAttempts || ctx.Err() != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		// The statement that timed out may still be under way at its
		// coordinator: its file is resumed once the nodes agree on the
		// schema, not at once beside it on another node, where two
		// creations of one table may both pass IF NOT EXISTS.
		if err := session.Session.AwaitSchemaAgreement(ctx); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
}

// migrationCalls are the steps in Go the schema files call (a comment
// `-- CALL name;`). gocqlx's migrate keeps them in a variable of its own,
// set once (setCalls). A step is run again when its file is resumed, so
// each is idempotent.
var migrationCalls = func() migrate.CallbackRegister {
	r := migrate.CallbackRegister{}
	r.Add(migrate.CallComment, "copy_session_index", copySessionIndex)
	return r
}()

var setCalls sync.Once

// sessionsToCopyCQL reads every entry of sessions_by_user with its write
// timestamp and the TTL it has left (037).
const sessionsToCopyCQL scanCQL = `SELECT user_id, token_hash, created_at, expires_at, WRITETIME(expires_at) AS written, TTL(expires_at) AS ttl FROM sessions_by_user`

// sessionCopyRow is a row of sessionsToCopyCQL.
type sessionCopyRow struct {
	UserID    string    `db:"user_id"`
	TokenHash string    `db:"token_hash"`
	CreatedAt time.Time `db:"created_at"`
	ExpiresAt time.Time `db:"expires_at"`
	Written   int64     `db:"written"`
	TTL       int       `db:"ttl"`
}

// columns are sessionsToCopyCQL's.
func (r *sessionCopyRow) columns() []any {
	return []any{&r.UserID, &r.TokenHash, &r.CreatedAt, &r.ExpiresAt, &r.Written, &r.TTL}
}

// copyConcurrency bounds the entries copySessionIndex writes at once.
const copyConcurrency = 16

// sessionEpochCQL reads the password epoch a session was opened at.
const sessionEpochCQL readCQL = `SELECT password_epoch FROM sessions WHERE token_hash = ?`

// copySessionIndex copies every entry of sessions_by_user into
// sessions_by_epoch and sessions_by_user_id (037), with its session's
// password epoch, and writes the epoch into the entry too: each at the
// entry's write timestamp and with the TTL it has left, so a revocation
// (at that timestamp + 1) shadows the copy whenever either lands, and the
// copy expires with its session. An entry without a creation (from before
// 010, long expired), without a TTL, or whose session is gone is left.
// Run again, it writes the same cells again.
func copySessionIndex(ctx context.Context, session gocqlx.Session, _ migrate.CallbackEvent, _ string) error {
	db := NewDB(session, "LOCAL_SERIAL")
	iter := db.scan(ctx, sessionsToCopyCQL).PageSize(1000).Iter()
	rows := make(chan sessionCopyRow)
	errs := make([]error, copyConcurrency)
	var wg sync.WaitGroup
	for w := range copyConcurrency {
		wg.Go(func() {
			for r := range rows {
				if errs[w] == nil {
					errs[w] = copySessionEntry(ctx, db, r)
				}
			}
		})
	}
	for {
		var r sessionCopyRow
		if !iter.Scan(r.columns()...) {
			break
		}
		if !r.CreatedAt.IsZero() && r.TTL > 0 {
			rows <- r
		}
	}
	close(rows)
	wg.Wait()
	return errors.Join(append(errs, iter.Close())...)
}

// copySessionEntry writes one entry's copies, once its session's epoch
// is read.
func copySessionEntry(ctx context.Context, db *DB, r sessionCopyRow) error {
	var epoch int
	q := db.query(ctx, 0, sessionEpochCQL, r.TokenHash)
	err := q.Scan(&epoch)
	q.Release()
	if errors.Is(err, gocql.ErrNotFound) {
		return nil // no session: nothing to list or revoke
	}
	if err != nil {
		return fmt.Errorf("copying a session entry: %w", err)
	}
	id := domain.SessionID(r.TokenHash)
	return all(ctx, []func(ctx context.Context) error{
		func(ctx context.Context) error {
			return db.write(ctx, "sessions_by_user.copy", sessionIndexCQL, r.UserID, r.TokenHash, r.CreatedAt, r.ExpiresAt, epoch, r.Written, r.TTL)
		},
		func(ctx context.Context) error {
			return db.write(ctx, "sessions_by_epoch.copy", sessionByEpochCQL, r.UserID, epoch, r.CreatedAt, id, r.TokenHash, r.ExpiresAt, r.Written, r.TTL)
		},
		func(ctx context.Context) error {
			return db.write(ctx, "sessions_by_user_id.copy", sessionByIDCQL, r.UserID, id, r.TokenHash, epoch, r.CreatedAt, r.ExpiresAt, r.Written, r.TTL)
		},
	})
}

// migrateAttempts bounds Migrate's runs after timeouts.
const migrateAttempts = 5

// migrationTimedOut reports a statement that ran out of time. gocqlx's
// migrate keeps the driver's error only as text.
func migrationTimedOut(err error) bool {
	return strings.Contains(err.Error(), gocql.ErrTimeoutNoResponse.Error()) ||
		strings.Contains(strings.ToLower(err.Error()), "timed out")
}

// migration is the last schema file and how many statements it holds.
type migration struct {
	name       string
	statements int
}

// latestMigration reads the embedded files once: the last name and its
// statement count, counted the way gocqlx's migrate counts them.
func latestMigration(f fs.FS) (migration, error) {
	names, err := fs.Glob(f, "*.cql")
	if err != nil || len(names) == 0 {
		return migration{}, errors.New("no schema files embedded")
	}
	sort.Strings(names)
	last := names[len(names)-1]
	b, err := fs.ReadFile(f, last)
	if err != nil {
		return migration{}, err
	}
	n := 0
	for _, stmt := range bytes.Split(b, []byte(";")) {
		if len(bytes.TrimSpace(stmt)) > 0 {
			n++
		}
	}
	return migration{name: last, statements: n}, nil
}

// readinessCQL reads how many statements of a migration gocqlx's migrate
// has applied.
const readinessCQL readCQL = `SELECT done FROM gocqlx_migrate WHERE name = ?`

// Readiness answers whether the keyspace can serve: Cassandra answers, and
// the last embedded migration has been applied completely. It costs one
// single-partition read.
type Readiness struct {
	session gocqlx.Session
	latest  migration
}

// NewReadiness prepares the check for the embedded schema.
func NewReadiness(session gocqlx.Session) (*Readiness, error) {
	latest, err := latestMigration(schema.FS)
	if err != nil {
		return nil, err
	}
	return &Readiness{session: session, latest: latest}, nil
}

// CheckReady returns nil when the service can serve, or an error whose text
// is the reason (it is shown to operators on /readyz).
func (r *Readiness) CheckReady(ctx context.Context) error {
	var done int
	q := newQuery(r.session.Session, ctx, string(readinessCQL), readinessCQL.attempts(), nil, r.latest.name)
	err := q.Scan(&done)
	q.Release()
	switch {
	case errors.Is(err, gocql.ErrNotFound), isInvalidQuery(err):
		return fmt.Errorf("%w: migration %s not applied (run `api migrate`)", domain.ErrSchemaBehind, r.latest.name)
	case err != nil:
		return fmt.Errorf("cassandra does not answer: %w", err)
	case done < r.latest.statements:
		return fmt.Errorf("%w: migration %s applied %d of %d statements", domain.ErrSchemaBehind, r.latest.name, done, r.latest.statements)
	}
	return nil
}

// isInvalidQuery reports Cassandra's "Invalid" answer, which is what a read of
// a table that does not exist yet gets.
func isInvalidQuery(err error) bool {
	var reqErr gocql.RequestError
	return errors.As(err, &reqErr) && reqErr.Code() == gocql.ErrCodeInvalid
}
