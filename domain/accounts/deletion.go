package accounts

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// Deleting an account (DELETE /v1/users/{id}, docs/design/deletion.md):
// the accounts' steps of it. The workflow, its index and its repair are
// domain/lifecycle's (DeleteUser): BeginDeletion, then the other
// services' steps, then MarkDeleted, ReleaseNames and EndSessions.
//
// A compare-and-set on the account's version moves it to status deleting,
// recording when and by whom (domain.Deletion): from then on the account
// is invisible (404), its login refused and no session of it works, but
// it still holds its names. Then each step, idempotent and safe to repeat
// or to land late: end the sessions, erase a suspension's list records,
// leave every group, delete the items it owns and leave the others',
// prune what is left of its library. Then a second compare-and-set,
// deleting -> deleted, clears the personal data, and only then are the
// username and email claims released: from status deleted the claimer
// takes them over anyway (Holder), so the names are free exactly once the
// account is deleted, never before. An index entry written before the
// first compare-and-set lets the repair find deletions a crash stopped.
// Every attempt's entry is its own (keyed by the attempt's tag): a losing
// attempt ends only its own, and the winner's is ended only by the finish
// of the deletion that applied, identified by the tag the account row
// records (docs/design/deletion.md: when two attempts shared one entry,
// the loser's end left the winner's deletion where no repair could find
// it).

// DeletionEntry is one attempt of a deletion as the index records it: the
// account, the attempt's tag, when it began, who asked, and the keys to
// release once it is deleted (the deleted row no longer has them).
type DeletionEntry struct {
	UserID      string
	Attempt     string
	At          time.Time
	By          string
	UsernameKey string
	EmailKey    string
}

// Of reports whether e is the entry of the deletion d recorded in the
// account row (the attempt whose compare-and-set applied).
func (e DeletionEntry) Of(d domain.Deletion) bool {
	return e.Attempt == d.Attempt && e.At.Equal(d.At)
}

// A DeletionGate is what a deletion's compare-and-set waits on, given by
// the workflow that deletes accounts (domain/lifecycle): its refusals,
// decided again on every attempt, and the index of deletions in progress,
// where the attempt is recorded before its compare-and-set.
type DeletionGate interface {
	// Check refuses the deletion of the account (an error), lets it
	// begin (done), or asks to decide again (not done, no error).
	Check(ctx context.Context, userID string) (done bool, err error)
	// Begin records an attempt in the index; writing it again is harmless.
	Begin(ctx context.Context, e DeletionEntry) error
	// End deletes this attempt's entry, never another's.
	End(ctx context.Context, e DeletionEntry) error
	// AfterStep is the test hook of the step "entry" (the attempt is
	// recorded, its compare-and-set not sent); nil in production.
	AfterStep(step string) error
}

// BeginDeletion moves the account to deleting (or finds it deleting or
// deleted) and returns it as it then stands, for the user or an active
// admin; the caller carries out the rest. The gate's check
// comes first, before anything is written; the index entry before the
// compare-and-set. An admin's deletion of another's account carries its
// audit entry in the row, written once the compare-and-set applied (and
// by MarkDeleted, from the row, whatever happened in between). The user
// proves the current password, an admin may not delete another admin
// (mayTakeOver), before anything else. Finishing a deletion already under
// way asks for nothing: it was allowed when it began, and the password
// is gone once the account is deleted.
func (a *Service) BeginDeletion(ctx context.Context, p domain.Principal, id string, proof Proof, gate DeletionGate) (domain.User, error) {
	if err := a.mayDelete(ctx, p, id); err != nil {
		return domain.User{}, err
	}
	by := p.UserID
	var out domain.User
	proven := -1 // the epoch whose password the owner proved (once: each check is counted)
	err := domain.Retry(ctx, maxChangeAttempts, domain.ErrBusy, func(int) (bool, error) {
		u, err := a.users.GetSerial(ctx, id)
		if errors.Is(err, domain.ErrNotFound) || (err == nil && u.Status == domain.StatusPending) {
			return false, domain.ErrUserNotFound
		}
		if err != nil {
			return false, err
		}
		if u.Status == domain.StatusDeleting || u.Status == domain.StatusDeleted {
			out = u
			return true, nil
		}
		if !(p.UserID == id && proven == u.PasswordEpoch) {
			if err := a.mayTakeOver(ctx, p, u, proof); err != nil {
				return false, err
			}
			proven = u.PasswordEpoch
		}
		if done, err := gate.Check(ctx, id); !done || err != nil {
			return false, err
		}
		now := a.now()
		next := u
		// The suspension stays in the row until MarkDeleted: it is what
		// the deletion's suspension step (domain/lifecycle) erases by key
		// (and records in the history).
		next.Status = domain.StatusDeleting
		next.Deletion = &domain.Deletion{At: now, By: by, Attempt: domain.NewAttempt()}
		next.Version, next.UpdatedAt = u.Version+1, now
		var audited []domain.AuditEntry
		if by != id {
			e := adminEntry(p, u, domain.AuditDeleted)
			e.At = now
			audited = []domain.AuditEntry{e}
			if err := domain.CarryAdminChange(ctx, a.audit, &next, audited); err != nil {
				return false, err
			}
		}
		entry := entryOf(next, u)
		if err := gate.Begin(ctx, entry); err != nil {
			// This attempt sends no compare-and-set: its entry, if the
			// write landed, is ended now (else the repair's).
			return false, errors.Join(err, gate.End(ctx, entry))
		}
		if err := gate.AfterStep("entry"); err != nil {
			return false, err
		}
		applied, err := a.users.Update(ctx, next)
		switch {
		case err != nil:
			// Unknown: the account may be deleting now or later; the entry
			// stays for the retry or the repair.
			return false, err
		case !applied:
			// Another change won: this attempt never began a deletion.
			// Its entry is its own, so ending it leaves the winner's.
			return false, gate.End(ctx, entry)
		}
		a.recordApplied(ctx, audited)
		out = next
		return true, nil
	})
	return out, err
}

// mayDelete answers whether p may ask for the deletion of account id at
// all: the user, or an active admin (mayTakeOver then decides on the
// account as it stands).
func (a *Service) mayDelete(ctx context.Context, p domain.Principal, id string) error {
	switch {
	case p.Anonymous():
		return domain.ErrNoSession
	case !domain.ValidID(id, domain.UserIDPrefix):
		return domain.ErrUserNotFound
	case p.UserID == id:
		return nil
	}
	_, err := a.RequireAdmin(ctx, p)
	return err
}

// entryOf is the index entry of next's deletion; keys come from the
// account as it was before (a deleted row has none).
func entryOf(next, before domain.User) DeletionEntry {
	return DeletionEntry{UserID: next.ID, Attempt: next.Deletion.Attempt, At: next.Deletion.At, By: next.Deletion.By,
		UsernameKey: before.UsernameKey, EmailKey: before.EmailKey}
}

// ReleaseNames gives back the names a deletion recorded in its index
// entry (the account row is deleted, or about to be: a deleted row has
// none), each only while it is still its committed claim, with the op
// found in it.
func (a *Service) ReleaseNames(ctx context.Context, e DeletionEntry) {
	a.claimer.ReleaseOld(ctx, entryKeys(e), e.UserID)
}

// EndSessions ends every session of the account but keep (the caller's
// own, ended last by a deletion; "" for none).
func (a *Service) EndSessions(ctx context.Context, id, keep string) error {
	return a.sessions.DeleteAll(ctx, id, keep)
}

// entryKeys are the claims a deletion releases.
func entryKeys(d DeletionEntry) []domain.Key {
	var keys []domain.Key
	if d.UsernameKey != "" {
		keys = append(keys, domain.Key{Kind: domain.KindUsername, Key: d.UsernameKey, Field: "username"})
	}
	if d.EmailKey != "" {
		keys = append(keys, domain.Key{Kind: domain.KindEmail, Key: d.EmailKey, Field: "email"})
	}
	return keys
}

// MarkDeleted is the compare-and-set deleting -> deleted: the personal
// data goes (names, email and whether it was verified, display name,
// password hash, roles, and the audit entries the row carried, once
// written); the id, the version, the deletion, the moderation history and
// the audit stay.
func (a *Service) MarkDeleted(ctx context.Context, id string) error {
	_, err := a.updateAccount(ctx, id, func(u domain.User) (domain.User, bool, error) {
		if u.Status != domain.StatusDeleting {
			return u, false, nil // deleted already (by a retry, the repair)
		}
		if err := domain.CarryAdminChange(ctx, a.audit, &u, nil); err != nil {
			return u, false, err
		}
		u.AdminChange = nil
		u.Status, u.Suspension = domain.StatusDeleted, nil
		u.Username, u.UsernameKey, u.Email, u.EmailKey = "", "", "", ""
		u.DisplayName, u.PasswordHash, u.Roles = "", "", nil
		u.EmailVerifiedAt = time.Time{}
		u.PendingEmail, u.PendingEmailKey, u.PendingEmailAt, u.PendingEmailSession = "", "", time.Time{}, ""
		u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "", "", time.Time{}
		u.PasswordResetRequired = false
		return u, true, nil
	})
	return err
}

// FenceDeletion moves a visible account's version on (a compare-and-set
// that changes nothing else) before the repair removes the entry of a
// deletion that did not take effect: that deletion's compare-and-set,
// still on its way however late (a hung node's queue), was decided on an
// older version and can no longer land, so no account is left deleting
// without the entry that lets the repair finish it (as the
// closings repair fences a group). An account deleting by now keeps its
// entry for the next repair; one gone or never activated needs no fence.
func (a *Service) FenceDeletion(ctx context.Context, id string) error {
	_, err := a.updateAccount(ctx, id, func(u domain.User) (domain.User, bool, error) {
		switch {
		case u.Status == domain.StatusDeleting || u.Status == domain.StatusDeleted:
			return u, false, domain.ErrBusy // began meanwhile: the next repair finishes it
		case !u.Visible():
			return u, false, nil
		}
		return u, true, nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	return err
}
