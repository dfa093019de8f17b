package repository

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/accounts"
)

// AccountAudit keeps the audit of admin actions on accounts
// (docs/design/account-audit.md): account_audit (migration 016), one
// partition per account, and audit_by_day (migration 029), one partition
// per day, each newest first.
type AccountAudit struct {
	db *DB
	// since is the first day of audit_by_day, read once (zero until).
	mu    sync.Mutex
	since time.Time
}

var _ accounts.AuditLog = (*AccountAudit)(nil)

// NewAccountAudit returns the store.
func NewAccountAudit(db *DB) *AccountAudit { return &AccountAudit{db: db} }

// The audit's statements.
const (
	accountAuditInsertCQL    versionedCQL = `INSERT INTO account_audit (user_id, at, version, action, actor, via, client_ip, user_agent, old_value, new_value, reason, until, session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	accountAuditPageCQL      readCQL      = `SELECT at, version, action, actor, via, client_ip, user_agent, old_value, new_value, reason, until, session_id FROM account_audit WHERE user_id = ? LIMIT ?`
	accountAuditPageAfterCQL readCQL      = `SELECT at, version, action, actor, via, client_ip, user_agent, old_value, new_value, reason, until, session_id FROM account_audit WHERE user_id = ? AND (at, version, action) < (?, ?, ?) LIMIT ?`

	// accountAuditClaimCQL writes an entry no compare-and-set of the
	// account decides (RecordNew), if its key is free; accountAuditTagCQL
	// reads back whose the row is.
	accountAuditClaimCQL conditionalCQL = `INSERT INTO account_audit (user_id, at, version, action, write_id, actor, via, client_ip, user_agent, old_value, new_value, reason, until, session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	accountAuditTagCQL   readCQL        = `SELECT write_id FROM account_audit WHERE user_id = ? AND at = ? AND version = ? AND action = ?`

	auditDayInsertCQL    versionedCQL = `INSERT INTO audit_by_day (day, at, user_id, version, action, actor, via, client_ip, user_agent, old_value, new_value, reason, until, session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	auditDayPageCQL      readCQL      = `SELECT at, user_id, version, action, actor, via, client_ip, user_agent, old_value, new_value, reason, until, session_id FROM audit_by_day WHERE day = ? LIMIT ?`
	auditDayPageAfterCQL readCQL      = `SELECT at, user_id, version, action, actor, via, client_ip, user_agent, old_value, new_value, reason, until, session_id FROM audit_by_day WHERE day = ? AND (at, user_id, version, action) < (?, ?, ?, ?) LIMIT ?`
	// auditSinceCQL reads when the migration that made audit_by_day ran.
	auditSinceCQL readCQL = `SELECT start_time FROM gocqlx_migrate WHERE name = '029_audit_by_day.cql'`
)

// Record writes the entries at once, each at its version, into the
// account's audit and its day's: every column each time (an empty one
// as unset, which leaves no tombstone), so a repeated or late write
// rewrites the same rows with the same values. It answers success only
// when both rows of every entry are written; a caller that retries (or
// carries the entry from the account row, domain.CarryAdminChange)
// writes both again.
func (s *AccountAudit) Record(ctx context.Context, entries []domain.AuditEntry) error {
	writes := make([]func(ctx context.Context) error, 0, 2*len(entries))
	for _, e := range entries {
		values := append(auditValues(e), int64(e.Version))
		writes = append(writes, func(ctx context.Context) error {
			return s.db.write(ctx, "account_audit.insert", accountAuditInsertCQL,
				append([]any{e.UserID, e.At, e.Version, string(e.Action)}, values...)...)
		}, func(ctx context.Context) error { return s.writeDay(ctx, e, values) })
	}
	return all(ctx, writes)
}

// writeDay writes e's row of its day's audit: values are its columns
// after the key, then the write's timestamp (its version).
func (s *AccountAudit) writeDay(ctx context.Context, e domain.AuditEntry, values []any) error {
	return s.db.write(ctx, "audit_by_day.insert", auditDayInsertCQL,
		append([]any{domain.AuditDay(e.At), e.At, e.UserID, e.Version, string(e.Action)}, values...)...)
}

// auditValues are an entry's columns after its key, as both tables take
// them: every one each time, an empty one as unset (which leaves no
// tombstone).
func auditValues(e domain.AuditEntry) []any {
	return []any{orAbsent(e.Actor, gocql.UnsetValue), e.Via, orAbsent(e.From.IP, gocql.UnsetValue), orAbsent(e.From.UserAgent, gocql.UnsetValue),
		orAbsent(e.Old, gocql.UnsetValue), orAbsent(e.New, gocql.UnsetValue), orAbsent(e.Reason, gocql.UnsetValue),
		orAbsent(e.Until, gocql.UnsetValue), orAbsent(e.From.Session, gocql.UnsetValue)}
}

// maxEntryKeys bounds the milliseconds RecordNew tries for one entry.
const maxEntryKeys = 16

// RecordNew writes an entry that no compare-and-set of the account
// decides, written before its action, into a row of its own: inserted IF
// NOT EXISTS with a tag of its own (migration 038), and where another
// entry holds the key (the same account, millisecond, version and action:
// two admins' actions at once) at the next millisecond, so neither
// overwrites the other. After a lost answer the row's tag at SERIAL says
// whether the key is ours; another's proves ours never lands there, as an
// entry is never deleted. Then the day's row, at the entry's version as
// Record writes it. It answers the entry as written (its At).
func (s *AccountAudit) RecordNew(ctx context.Context, e domain.AuditEntry) (domain.AuditEntry, error) {
	writeID := newWriteID()
	values := auditValues(e)
	e.At = e.At.Truncate(time.Millisecond)
	for range maxEntryKeys {
		applied, err := s.db.exec(ctx, lwt{
			name: "account_audit.claim",
			run: func(ctx context.Context) (bool, error) {
				return s.db.cas(ctx, nil, accountAuditClaimCQL, append([]any{e.UserID, e.At, e.Version, string(e.Action), writeID}, values...)...)
			},
			resolve: func(ctx context.Context) (bool, bool, error) {
				tags, err := selectValues[string](s.db.query(ctx, s.db.Serial, accountAuditTagCQL, e.UserID, e.At, e.Version, string(e.Action)))
				if err != nil {
					return false, false, err
				}
				return len(tags) == 1 && tags[0] == writeID, len(tags) == 0, nil
			},
		})
		if err != nil {
			return domain.AuditEntry{}, err
		}
		if applied {
			return e, s.writeDay(ctx, e, append(values, int64(e.Version)))
		}
		e.At = e.At.Add(time.Millisecond)
	}
	return domain.AuditEntry{}, fmt.Errorf("account_audit.claim: %d milliseconds in a row held by other entries: %w", maxEntryKeys, domain.ErrUnavailable)
}

// dayRow is a row of audit_by_day as the page reads it.
type dayRow struct {
	auditRow
	UserID string `db:"user_id"`
}

// columns are auditDayPageCQL's.
func (r *dayRow) columns() []any {
	return []any{&r.At, &r.UserID, &r.Version, &r.Action, &r.Actor, &r.Via, &r.ClientIP, &r.UserAgent, &r.Old, &r.New, &r.Reason, &r.Until, &r.Session}
}

// Day reads one slice of the day's partition, newest first.
func (s *AccountAudit) Day(ctx context.Context, day time.Time, after *domain.AuditPosition, limit int) ([]domain.AuditEntry, error) {
	q := s.db.query(ctx, 0, auditDayPageCQL, day, limit)
	if after != nil {
		q = s.db.query(ctx, 0, auditDayPageAfterCQL, day, after.At, after.UserID, after.Version, string(after.Action), limit)
	}
	rows, err := selectRows[dayRow](q)
	if err != nil {
		return nil, dbErr("audit_by_day.page", err)
	}
	out := make([]domain.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = r.toDomain(r.UserID)
	}
	return out, nil
}

// Since is the day audit_by_day was made (its migration's start), read
// once per process: entries from before are in each account's audit
// only.
func (s *AccountAudit) Since(ctx context.Context) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.since.IsZero() {
		return s.since, nil
	}
	var start time.Time
	q := s.db.query(ctx, 0, auditSinceCQL)
	defer q.Release()
	if err := q.Scan(&start); err != nil {
		return time.Time{}, dbErr("audit_by_day.since", err)
	}
	s.since = domain.AuditDay(start)
	return s.since, nil
}

// auditRow is a row of account_audit as the page reads it.
type auditRow struct {
	At        time.Time `db:"at"`
	Version   int       `db:"version"`
	Action    string    `db:"action"`
	Actor     string    `db:"actor"`
	Via       string    `db:"via"`
	ClientIP  string    `db:"client_ip"`
	UserAgent string    `db:"user_agent"`
	Old       string    `db:"old_value"`
	New       string    `db:"new_value"`
	Reason    string    `db:"reason"`
	Until     time.Time `db:"until"`
	Session   string    `db:"session_id"`
}

// columns are accountAuditPageCQL's.
func (r *auditRow) columns() []any {
	return []any{&r.At, &r.Version, &r.Action, &r.Actor, &r.Via, &r.ClientIP, &r.UserAgent, &r.Old, &r.New, &r.Reason, &r.Until, &r.Session}
}

func (r auditRow) toDomain(userID string) domain.AuditEntry {
	return domain.AuditEntry{UserID: userID, At: r.At.UTC(), Version: r.Version, Action: domain.AuditAction(r.Action),
		Actor: r.Actor, Via: r.Via, From: domain.Origin{IP: r.ClientIP, UserAgent: r.UserAgent, Session: r.Session},
		Old: r.Old, New: r.New, Reason: r.Reason, Until: utcOrZero(r.Until)}
}

// Page reads one slice of the user's partition, newest first: a page
// costs one read however long the audit.
func (s *AccountAudit) Page(ctx context.Context, userID string, after *domain.AuditCursor, limit int) ([]domain.AuditEntry, error) {
	q := s.db.query(ctx, 0, accountAuditPageCQL, userID, limit)
	if after != nil {
		q = s.db.query(ctx, 0, accountAuditPageAfterCQL, userID, after.At, after.Version, string(after.Action), limit)
	}
	rows, err := selectRows[auditRow](q)
	if err != nil {
		return nil, dbErr("account_audit.page", err)
	}
	out := make([]domain.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = r.toDomain(userID)
	}
	return out, nil
}

// carriedEntry is an audit entry as the account row carries it
// (users.admin_change, JSON): the user id is the row's.
type carriedEntry struct {
	At        time.Time `json:"at"`
	Version   int       `json:"version"`
	Action    string    `json:"action"`
	Actor     string    `json:"actor,omitempty"`
	Via       string    `json:"via"`
	ClientIP  string    `json:"ip,omitempty"`
	UserAgent string    `json:"ua,omitempty"`
	Old       string    `json:"old,omitempty"`
	New       string    `json:"new,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Until     time.Time `json:"until,omitzero"`
	Session   string    `json:"session,omitempty"`
}

// encodeAdminChange is the admin_change column of entries ("" for none).
func encodeAdminChange(entries []domain.AuditEntry) string {
	if len(entries) == 0 {
		return ""
	}
	out := make([]carriedEntry, len(entries))
	for i, e := range entries {
		out[i] = carriedEntry{At: e.At.UTC(), Version: e.Version, Action: string(e.Action), Actor: e.Actor, Via: e.Via,
			ClientIP: e.From.IP, UserAgent: e.From.UserAgent, Old: e.Old, New: e.New, Reason: e.Reason, Until: e.Until.UTC(), Session: e.From.Session}
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(fmt.Sprintf("repository: encoding an audit entry: %v", err)) // strings and times only: cannot fail
	}
	return string(b)
}

// decodeAdminChange reads the admin_change column of the account id. A
// value that does not parse (never written by this code) reads as none
// rather than making the account unreadable.
func decodeAdminChange(id, s string) []domain.AuditEntry {
	if s == "" {
		return nil
	}
	var in []carriedEntry
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil
	}
	out := make([]domain.AuditEntry, len(in))
	for i, c := range in {
		out[i] = domain.AuditEntry{UserID: id, At: c.At.UTC(), Version: c.Version, Action: domain.AuditAction(c.Action),
			Actor: c.Actor, Via: c.Via, From: domain.Origin{IP: c.ClientIP, UserAgent: c.UserAgent, Session: c.Session},
			Old: c.Old, New: c.New, Reason: c.Reason, Until: utcOrZero(c.Until)}
	}
	return out
}
