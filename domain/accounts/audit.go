package accounts

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// The audit of admin actions on accounts (docs/design/account-audit.md).
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
// a reader or a late landing never adds a second entry. An admin's action
// on another's sessions or factors, and a recovery code's use, write no
// account row: they are audited before they act instead (auditSessions,
// useRecoveryCode).

// AuditLog keeps the audit (account_audit, and audit_by_day for Day).
type AuditLog interface {
	domain.AuditRecorder
	// RecordNew writes an entry that no compare-and-set of the account
	// decides (written before its action: AuditAction.OfSessions) into a
	// row of its own: where another entry holds its key (the same
	// account, millisecond, version and action) it takes a later
	// millisecond, so two actions at once are both kept. It answers the
	// entry as written.
	RecordNew(ctx context.Context, e domain.AuditEntry) (domain.AuditEntry, error)
	// Page returns up to limit entries of the user's audit, newest first,
	// after the cursor (nil: from the newest).
	Page(ctx context.Context, userID string, after *domain.AuditCursor, limit int) ([]domain.AuditEntry, error)
	// Day returns up to limit entries of every account's audit of day
	// (midnight UTC, domain.AuditDay), newest first, after the position
	// (nil: from the day's newest).
	Day(ctx context.Context, day time.Time, after *domain.AuditPosition, limit int) ([]domain.AuditEntry, error)
	// Since is the first day whose entries Day has all of (the days
	// before it are in each account's audit only).
	Since(ctx context.Context) (time.Time, error)
}

// Intents is an index of an admin's changes of accounts in progress: a
// round that carries audit entries records its intent before its
// compare-and-set and ends it once its entries are written (or once it
// can no longer apply). An entry left behind is of a round whose
// process stopped: the sweeper fences the account, so that its
// compare-and-set can never land after, writes the entries the row
// carries and only then ends the entry (docs/design/account-audit.md).
// Satisfied by moderation.AdminIntents: moderation's index of attempts
// in progress, whose sweeper finishes suspensions the same way.
type Intents interface {
	// Begin records an intent on the account userID; an error means it
	// may not be read by the sweeper, and the round is not sent.
	Begin(ctx context.Context, userID string) (domain.Intent, error)
	// End ends this intent's entry, never another's.
	End(ctx context.Context, i domain.Intent) error
}

// carriesOwn reports whether next, written over u, carries audit entries
// of its own round (an admin's change of another account), not only
// those an earlier one left.
func carriesOwn(u, next domain.User) bool {
	return len(next.AdminChange) > 0 && next.AdminChange[0].Version == u.Version+1
}

// intend records the intent of a round that writes next over u when it
// carries entries of its own (nil: none needed, or no index).
func (a *Service) intend(ctx context.Context, u, next domain.User) (*domain.Intent, error) {
	if a.cfg.Intents == nil || !carriesOwn(u, next) {
		return nil, nil
	}
	i, err := a.cfg.Intents.Begin(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	return &i, nil
}

// settle finishes a round's intent by how its compare-and-set ended:
// applied, its entries are written (RecordApplied: past the caller's
// context) and then the intent ends; never sent, or answered not
// applied, it ends at once; an outcome unknown keeps it for the sweeper,
// as does an entry whose write failed (the row keeps them).
func (a *Service) settle(ctx context.Context, i *domain.Intent, entries []domain.AuditEntry, applied, sent bool, err error) {
	ctx = context.WithoutCancel(ctx)
	if applied {
		if a.recordApplied(ctx, entries) != nil {
			return
		}
	} else if sent && err != nil {
		return
	}
	if i != nil {
		_ = a.cfg.Intents.End(ctx, *i)
	}
}

// noAudit is the audit of a service built without one.
type noAudit struct{}

func (noAudit) Record(context.Context, []domain.AuditEntry) error { return nil }
func (noAudit) RecordNew(_ context.Context, e domain.AuditEntry) (domain.AuditEntry, error) {
	return e, nil
}
func (noAudit) Page(context.Context, string, *domain.AuditCursor, int) ([]domain.AuditEntry, error) {
	return nil, nil
}
func (noAudit) Day(context.Context, time.Time, *domain.AuditPosition, int) ([]domain.AuditEntry, error) {
	return nil, nil
}
func (noAudit) Since(context.Context) (time.Time, error) { return time.Time{}, nil }

// adminEntry is the start of the entry of p's action on u, the account as
// read before the change (whose compare-and-set writes the next version).
func adminEntry(p domain.Principal, u domain.User, action domain.AuditAction) domain.AuditEntry {
	return domain.AuditEntry{UserID: u.ID, Version: u.Version + 1, Action: action, Actor: p.UserID, Via: domain.ViaAPI, From: p.From}
}

// changeEntries are the entries of an admin's change of another's account
// u into next (next.UpdatedAt set): one per field whose value changed.
// cancelled: the change sent u's own address back while u asked for a new
// one, which it drops (accountChange.cancels).
func changeEntries(p domain.Principal, u, next domain.User, cancelled bool) []domain.AuditEntry {
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
	switch {
	case cancelled:
		// The new address asked for is given up: the entry records it,
		// and the address the account keeps (as written now).
		add(domain.AuditEmailChanged, u.PendingEmail, next.Email)
	default:
		add(domain.AuditEmailChanged, u.Email, next.Email)
	}
	if next.PendingEmailKey != "" && next.PendingEmailKey != u.PendingEmailKey {
		// A new email is only asked for (docs/design/email-change.md): the
		// entry records the address asked for, which becomes the
		// account's once confirmed.
		add(domain.AuditEmailChanged, u.Email, next.PendingEmail)
	}
	add(domain.AuditDisplayNameChanged, u.DisplayName, next.DisplayName)
	return out
}

// recordApplied writes the audit entries of an applied action.
func (a *Service) recordApplied(ctx context.Context, entries []domain.AuditEntry) error {
	return domain.RecordApplied(ctx, a.audit, a.log, entries)
}

// Audit pages through the audit of an account's admin actions, newest
// first (admins only: the user themself is refused too, it is an admin's
// view). An account being deleted or deleted still has its audit (an
// admin's deletion its latest entry): that is when it is looked for.
// The entries the account row still carries are written first, so the
// page holds every action that took effect.
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

// AuditFilter narrows the audit of every account: to one actor's
// entries, and to one action (each "" for any).
type AuditFilter struct {
	Actor  string
	Action domain.AuditAction
}

func (f AuditFilter) matches(e domain.AuditEntry) bool {
	return (f.Actor == "" || e.Actor == f.Actor) && (f.Action == "" || e.Action == f.Action)
}

// What a page of the audit of every account reads: it starts no read
// once it has finished 31 days or read 1000 entries (so it reads at most
// 1000 plus one batch), whatever the audit holds, so a filter that
// matches little, or days without an entry, answer a shorter page with a
// cursor to go on from.
const (
	auditDaysPerPage = 31
	auditRowsPerPage = 1000
	auditBatch       = 200
)

// AllAudit pages through the audit of every account, newest first, one
// day's partition after another back to the day the store began keeping
// it (AuditLog.Since), filtered (admins only). A page stops after 31
// days, or once it has read 1000 entries: it may hold fewer than limit
// with a cursor still (nothing more in what it read; the next page goes
// on further back), and the last page has none.
func (a *Service) AllAudit(ctx context.Context, p domain.Principal, filter AuditFilter, cursor string, limit int) (domain.Page[domain.AuditEntry], error) {
	if _, err := a.RequireAdmin(ctx, p); err != nil {
		return domain.Page[domain.AuditEntry]{}, err
	}
	// A few minutes ahead: an entry of a process whose clock runs ahead
	// near midnight is in the next day.
	at := domain.GlobalAuditCursor{Day: domain.AuditDay(a.now().Add(5 * time.Minute))}
	if cursor != "" {
		c, err := domain.DecodeGlobalAuditCursor(cursor)
		if err != nil {
			return domain.Page[domain.AuditEntry]{}, err
		}
		at = *c
	}
	since, err := a.audit.Since(ctx)
	if err != nil {
		return domain.Page[domain.AuditEntry]{}, err
	}
	var out []domain.AuditEntry
	days, rows := 0, 0
	for !at.Day.Before(since) && days < auditDaysPerPage && rows < auditRowsPerPage {
		batch := auditBatch
		if filter == (AuditFilter{}) {
			batch = limit + 1 - len(out)
		}
		got, err := a.audit.Day(ctx, at.Day, at.After, batch)
		if err != nil {
			return domain.Page[domain.AuditEntry]{}, err
		}
		rows += len(got)
		for _, e := range got {
			at.After = new(e.PositionOf())
			if !filter.matches(e) {
				continue
			}
			if out = append(out, e); len(out) == limit+1 {
				// One more than shown: the next page starts after the
				// last shown.
				last := out[limit-1]
				return domain.Page[domain.AuditEntry]{Items: out[:limit],
					Next: domain.GlobalAuditCursor{Day: domain.AuditDay(last.At), After: new(last.PositionOf())}.Encode()}, nil
			}
		}
		if len(got) < batch {
			at = domain.GlobalAuditCursor{Day: at.Day.AddDate(0, 0, -1)}
			days++
		}
	}
	page := domain.Page[domain.AuditEntry]{Items: out}
	if !at.Day.Before(since) {
		page.Next = at.Encode() // the budget ran out before the first day
	}
	return page, nil
}
