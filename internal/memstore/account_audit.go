package memstore

import (
	"context"
	"sort"
	"strconv"

	"shelf/domain"
	"shelf/domain/accounts"
)

// AccountAudit keeps the audit of admin actions on accounts as
// repository.AccountAudit does: one row per entry key (user, at, version,
// action), each write one store call that rewrites the row (never
// deleted).
type AccountAudit struct{ s *Store }

var _ accounts.AuditLog = (*AccountAudit)(nil)

// AccountAudit is the store as the audit log.
func (s *Store) AccountAudit() *AccountAudit { return &AccountAudit{s} }

func auditKey(e domain.AuditEntry) string {
	return e.UserID + "|" + strconv.FormatInt(e.At.UnixMilli(), 10) + "|" + strconv.Itoa(e.Version) + "|" + string(e.Action)
}

// Record writes each entry, one call each.
func (a *AccountAudit) Record(_ context.Context, entries []domain.AuditEntry) error {
	for _, e := range entries {
		_, err := a.s.call("account_audit.insert", true, func() (bool, error) {
			if a.s.audit == nil {
				a.s.audit = map[string]domain.AuditEntry{}
			}
			a.s.audit[auditKey(e)] = e
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Page reads the user's audit, newest first, after the cursor.
func (a *AccountAudit) Page(_ context.Context, userID string, after *domain.AuditCursor, limit int) ([]domain.AuditEntry, error) {
	var out []domain.AuditEntry
	_, err := a.s.call("account_audit.page", false, func() (bool, error) {
		out = a.s.auditOf(userID)
		return true, nil
	})
	if after != nil {
		for len(out) > 0 && !auditBefore(out[0], *after) {
			out = out[1:]
		}
	}
	return out[:min(limit, len(out))], err
}

// auditBefore reports whether e comes after the position c in the audit's
// order (at, version and action, all descending).
func auditBefore(e domain.AuditEntry, c domain.AuditCursor) bool {
	switch {
	case !e.At.Equal(c.At):
		return e.At.Before(c.At)
	case e.Version != c.Version:
		return e.Version < c.Version
	}
	return e.Action < c.Action
}

// auditOf lists a user's entries in the audit's order (under the lock).
func (s *Store) auditOf(userID string) []domain.AuditEntry {
	var out []domain.AuditEntry
	for _, e := range s.audit {
		if e.UserID == userID {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return auditBefore(out[j], out[i].CursorOf()) })
	return out
}

// AuditEntries returns a user's audit entries, newest first, for checks.
func (s *Store) AuditEntries(userID string) []domain.AuditEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auditOf(userID)
}
