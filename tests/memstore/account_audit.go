package memstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// AccountAudit keeps the audit of admin actions on accounts as the
// repository does, in two tables never deleted from: by account (Page)
// and by day (Day), each entry a row in both, written by a call each.
type AccountAudit struct{ s *Store }

var _ accounts.AuditLog = (*AccountAudit)(nil)

// AccountAudit is the store as the audit log.
func (s *Store) AccountAudit() *AccountAudit { return &AccountAudit{s} }

func auditKey(e domain.AuditEntry) string {
	return e.UserID + "|" + strconv.FormatInt(e.At.UnixMilli(), 10) + "|" + strconv.Itoa(e.Version) + "|" + string(e.Action)
}

// Record writes both rows of every entry, one call each, and tries them
// all whatever fails, as the repository sends them at once: any of them
// may be left out.
func (a *AccountAudit) Record(_ context.Context, entries []domain.AuditEntry) error {
	var errs []error
	for _, e := range entries {
		errs = append(errs, a.insert("account_audit.insert", &a.s.audit, e), a.insert("audit_by_day.insert", &a.s.auditDay, e))
	}
	return errors.Join(errs...)
}

// insert writes e into one of the audit's tables, a call of its own
// named name.
func (a *AccountAudit) insert(name string, rows *map[string]domain.AuditEntry, e domain.AuditEntry) error {
	_, err := a.s.call(name, true, func() (bool, error) {
		if *rows == nil {
			*rows = map[string]domain.AuditEntry{}
		}
		(*rows)[auditKey(e)] = e
		return true, nil
	})
	return err
}

// RecordNew writes the entry's account_audit row if its key is free, one
// compare-and-set call per millisecond tried (as the repository's), then
// its day's row. A lost answer is an unknown outcome: the repository's
// read-back settles what it can, and the service treats the rest so.
func (a *AccountAudit) RecordNew(_ context.Context, e domain.AuditEntry) (domain.AuditEntry, error) {
	a.s.mu.Lock()
	a.s.auditSeq++
	tag := "audit-" + strconv.Itoa(a.s.auditSeq)
	a.s.mu.Unlock()
	e.At = e.At.Truncate(time.Millisecond)
	for range maxEntryKeys {
		applied, err := a.s.call("account_audit.claim", true, func() (bool, error) {
			if a.s.audit == nil {
				a.s.audit = map[string]domain.AuditEntry{}
			}
			if a.s.auditTags == nil {
				a.s.auditTags = map[string]string{}
			}
			k := auditKey(e)
			if _, taken := a.s.audit[k]; taken {
				return a.s.auditTags[k] == tag, nil
			}
			a.s.audit[k], a.s.auditTags[k] = e, tag
			return true, nil
		})
		if err != nil {
			return domain.AuditEntry{}, err
		}
		if applied {
			return e, a.insert("audit_by_day.insert", &a.s.auditDay, e)
		}
		e.At = e.At.Add(time.Millisecond)
	}
	return domain.AuditEntry{}, fmt.Errorf("account_audit.claim: every millisecond tried is held: %w", domain.ErrUnavailable)
}

// maxEntryKeys is the repository's bound on the milliseconds RecordNew
// tries.
const maxEntryKeys = 16

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

// Day reads every account's entries of day, newest first, after the
// position.
func (a *AccountAudit) Day(_ context.Context, day time.Time, after *domain.AuditPosition, limit int) ([]domain.AuditEntry, error) {
	var out []domain.AuditEntry
	_, err := a.s.call("audit_by_day.page", false, func() (bool, error) {
		for _, e := range a.s.auditDay {
			if domain.AuditDay(e.At).Equal(day) && (after == nil || e.PositionOf().Before(*after)) {
				out = append(out, e)
			}
		}
		return true, nil
	})
	sort.Slice(out, func(i, j int) bool { return out[j].PositionOf().Before(out[i].PositionOf()) })
	return out[:min(limit, len(out))], err
}

// Since is the day of the store's first entry (today's, without one):
// the memory store keeps every day from its start.
func (a *AccountAudit) Since(context.Context) (time.Time, error) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	first := a.s.now
	for _, e := range a.s.auditDay {
		if e.At.Before(first) {
			first = e.At
		}
	}
	return domain.AuditDay(first), nil
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

// AuditDayEntries returns a user's entries in the audit by day, in no
// order, for checks.
func (s *Store) AuditDayEntries(userID string) []domain.AuditEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []domain.AuditEntry
	for _, e := range s.auditDay {
		if e.UserID == userID {
			out = append(out, e)
		}
	}
	return out
}
