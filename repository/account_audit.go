package repository

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/accounts"
)

// AccountAudit keeps the audit of admin actions on accounts
// (account_audit, migration 016; docs/design.md#account-audit): one
// partition per account, newest first.
type AccountAudit struct{ db *DB }

var _ accounts.AuditLog = (*AccountAudit)(nil)

// NewAccountAudit returns the store.
func NewAccountAudit(db *DB) *AccountAudit { return &AccountAudit{db: db} }

// The audit's statements.
const (
	accountAuditInsertCQL    versionedCQL = `INSERT INTO account_audit (user_id, at, version, action, actor, via, client_ip, user_agent, old_value, new_value, reason, until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	accountAuditPageCQL      readCQL      = `SELECT at, version, action, actor, via, client_ip, user_agent, old_value, new_value, reason, until FROM account_audit WHERE user_id = ? LIMIT ?`
	accountAuditPageAfterCQL readCQL      = `SELECT at, version, action, actor, via, client_ip, user_agent, old_value, new_value, reason, until FROM account_audit WHERE user_id = ? AND (at, version, action) < (?, ?, ?) LIMIT ?`
)

// Record writes the entries at once, each at its version: every column
// each time (an empty one as unset, which leaves no tombstone), so a
// repeated or late write rewrites the same row with the same values.
func (s *AccountAudit) Record(ctx context.Context, entries []domain.AuditEntry) error {
	writes := make([]func() error, len(entries))
	for i, e := range entries {
		writes[i] = func() error {
			return s.db.write(ctx, "account_audit.insert", accountAuditInsertCQL, e.UserID, e.At, e.Version, string(e.Action),
				orAbsent(e.Actor, gocql.UnsetValue), e.Via, orAbsent(e.From.IP, gocql.UnsetValue), orAbsent(e.From.UserAgent, gocql.UnsetValue),
				orAbsent(e.Old, gocql.UnsetValue), orAbsent(e.New, gocql.UnsetValue), orAbsent(e.Reason, gocql.UnsetValue),
				orAbsent(e.Until, gocql.UnsetValue), int64(e.Version))
		}
	}
	return all(writes)
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
}

// columns are accountAuditPageCQL's.
func (r *auditRow) columns() []any {
	return []any{&r.At, &r.Version, &r.Action, &r.Actor, &r.Via, &r.ClientIP, &r.UserAgent, &r.Old, &r.New, &r.Reason, &r.Until}
}

func (r auditRow) toDomain(userID string) domain.AuditEntry {
	return domain.AuditEntry{UserID: userID, At: r.At.UTC(), Version: r.Version, Action: domain.AuditAction(r.Action),
		Actor: r.Actor, Via: r.Via, From: domain.Origin{IP: r.ClientIP, UserAgent: r.UserAgent},
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
}

// encodeAdminChange is the admin_change column of entries ("" for none).
func encodeAdminChange(entries []domain.AuditEntry) string {
	if len(entries) == 0 {
		return ""
	}
	out := make([]carriedEntry, len(entries))
	for i, e := range entries {
		out[i] = carriedEntry{At: e.At.UTC(), Version: e.Version, Action: string(e.Action), Actor: e.Actor, Via: e.Via,
			ClientIP: e.From.IP, UserAgent: e.From.UserAgent, Old: e.Old, New: e.New, Reason: e.Reason, Until: e.Until.UTC()}
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
			Actor: c.Actor, Via: c.Via, From: domain.Origin{IP: c.ClientIP, UserAgent: c.UserAgent},
			Old: c.Old, New: c.New, Reason: c.Reason, Until: utcOrZero(c.Until)}
	}
	return out
}
