package accounts

import (
	"context"
	"errors"

	"shelf/domain"
)

// The audit of admin actions on accounts (docs/design.md#account-audit).
//
// An admin action is decided on the account row read at SERIAL, and its
// entries are decided with it: their key (the version the change writes,
// the action) and their values (the actor, the origin, old and new). The
// compare-and-set that makes the change writes them into the row too
// (User.AdminChange), where they stay until the next admin action. Only
// then, once the change is known applied, are they written to the audit:
// an entry is never written for a change that did not take effect (an
// unknown outcome writes nothing), and one whose write was lost, or never
// sent, is written again from the row by the next admin action on the
// account (domain.CarryAdminChange) or by the next read of the audit.
// Every write of an entry is the same row with the same values: a retry,
// a reader or a late landing never adds a second entry.

// AuditLog keeps the audit (account_audit).
type AuditLog interface {
	domain.AuditRecorder
	// Page returns up to limit entries of the user's audit, newest first,
	// after the cursor (nil: from the newest).
	Page(ctx context.Context, userID string, after *domain.AuditCursor, limit int) ([]domain.AuditEntry, error)
}

// SetAudit wires the audit log. Without it (tests of other protocols)
// the entries stay in the account rows, written nowhere else.
func (a *Service) SetAudit(l AuditLog) { a.audit = l }

// noAudit is the audit of a service built without one.
type noAudit struct{}

func (noAudit) Record(context.Context, []domain.AuditEntry) error { return nil }
func (noAudit) Page(context.Context, string, *domain.AuditCursor, int) ([]domain.AuditEntry, error) {
	return nil, nil
}

// adminEntry is the start of the entry of p's action on u, the account as
// read before the change (whose compare-and-set writes the next version).
func adminEntry(p domain.Principal, u domain.User, action domain.AuditAction) domain.AuditEntry {
	return domain.AuditEntry{UserID: u.ID, Version: u.Version + 1, Action: action, Actor: p.UserID, Via: domain.ViaAPI, From: p.From}
}

// changeEntries are the entries of an admin's change of another's account
// u into next (next.UpdatedAt set): one per field whose value changed.
func changeEntries(p domain.Principal, u, next domain.User) []domain.AuditEntry {
	var out []domain.AuditEntry
	add := func(action domain.AuditAction, old, now string) {
		if old == now {
			return
		}
		e := adminEntry(p, u, action)
		e.At, e.Old, e.New = next.UpdatedAt, old, now
		out = append(out, e)
	}
	add(domain.AuditUsernameChanged, u.Username, next.Username)
	add(domain.AuditEmailChanged, u.Email, next.Email)
	if next.PendingEmailKey != "" && next.PendingEmailKey != u.PendingEmailKey {
		// A new email is only asked for (docs/design.md#email-change): the
		// entry records the
		// address asked for, which becomes the account's once confirmed.
		add(domain.AuditEmailChanged, u.Email, next.PendingEmail)
	}
	add(domain.AuditDisplayNameChanged, u.DisplayName, next.DisplayName)
	return out
}

// recordApplied writes the audit entries of an applied action.
func (a *Service) recordApplied(ctx context.Context, entries []domain.AuditEntry) {
	domain.RecordApplied(ctx, a.audit, a.log, entries)
}

// Audit pages through the audit of an account's admin actions, newest
// first (admins only; the user themself included, who learns who acted
// from the notices they get, not from here). An account being deleted or
// deleted still has its audit, the deletion's entry last: that is when it
// is looked for. The entries the account row still carries are written
// first, so the page holds every action that took effect.
func (a *Service) Audit(ctx context.Context, p domain.Principal, userID, cursor string, limit int) (domain.Page[domain.AuditEntry], error) {
	if _, err := a.RequireAdmin(ctx, p); err != nil {
		return domain.Page[domain.AuditEntry]{}, err
	}
	if !domain.ValidID(userID, domain.UserIDPrefix) {
		return domain.Page[domain.AuditEntry]{}, domain.ErrUserNotFound
	}
	var after *domain.AuditCursor
	if cursor != "" {
		var err error
		if after, err = domain.DecodeAuditCursor(cursor); err != nil {
			return domain.Page[domain.AuditEntry]{}, err
		}
	}
	u, err := a.users.Get(ctx, userID)
	switch {
	case errors.Is(err, domain.ErrNotFound) || (err == nil && u.Status == domain.StatusPending):
		return domain.Page[domain.AuditEntry]{}, domain.ErrUserNotFound
	case err != nil:
		return domain.Page[domain.AuditEntry]{}, err
	}
	if len(u.AdminChange) > 0 {
		if err := a.audit.Record(ctx, u.AdminChange); err != nil {
			return domain.Page[domain.AuditEntry]{}, err
		}
	}
	items, err := a.audit.Page(ctx, userID, after, limit+1)
	if err != nil {
		return domain.Page[domain.AuditEntry]{}, err
	}
	return domain.PageOf(items, limit, func(e domain.AuditEntry) string { return e.CursorOf().Encode() }), nil
}
