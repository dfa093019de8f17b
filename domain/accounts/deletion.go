package accounts

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"shelf/domain"
)

// Deleting an account (DELETE /v1/users/{id}, docs/design/deletion.md):
// the accounts' steps of it. The workflow, its index and its repair are
// domain/lifecycle's (DeleteUser): the rounds of a Deletion's
// compare-and-set, then the other services' steps, then MarkDeleted,
// ReleaseHeld, ReleaseNames, and EndSession for each of SessionsOf.
//
// A compare-and-set on the account's version moves it to status deleting,
// recording when and by whom (domain.Deletion): from then on the account
// is invisible (404), its login refused and its sessions work for nothing
// but finishing the deletion (ErrDeletionSession), but it still holds its
// names. Then each step, idempotent and safe to repeat or to land late:
// erase a suspension's records, leave every group, delete the items it
// owns and leave the others', purge what is left of its library. Then a
// second compare-and-set, deleting -> deleted, clears the personal data,
// and only then are the username and email claims released: from status
// deleted the claimer takes them over anyway (Holder), so the names are
// free exactly once the account is deleted, never before. The sessions
// end last, so the user's repeat of the request still authenticates until
// then. An index entry written before the first compare-and-set lets the
// repair find deletions a crash stopped. Every attempt's entry is its own
// (keyed by the attempt's tag): a losing attempt ends only its own, and
// the winner's is ended only by the finish of the deletion that applied,
// identified by the tag the account row records; an entry two attempts
// shared could be ended by the loser and leave the winner's deletion
// where no repair finds it (docs/design/deletion.md).

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

// A Deletion is one request to delete an account, as the accounts decide
// its compare-and-set. The workflow that deletes accounts
// (domain/lifecycle) runs its rounds and decides between the steps: each
// round Reads the account, then (after the workflow's own refusals)
// Stages the compare-and-set, whose index entry the workflow records,
// then Applies it. A round that lost to another change starts over with
// Read.
type Deletion struct {
	a     *Service
	p     domain.Principal
	id    string
	proof Proof
	// proven is the epoch whose password the owner proved (once: each
	// check is counted).
	proven int
	// before is the account as the round read it; next its
	// compare-and-set, audited the admin's entries it carries (Stage).
	before, next domain.User
	audited      []domain.AuditEntry
	// lost is the attempt tag of an admin's round that lost its
	// compare-and-set to another change of the account: the next Read
	// holds the account's changes back first.
	lost string
}

// AskDeletion begins p's request to delete account id, which only the
// user or an active admin may make; the account, once Read, decides the
// rest.
func (a *Service) AskDeletion(ctx context.Context, p domain.Principal, id string, proof Proof) (*Deletion, error) {
	if err := a.mayDelete(ctx, p, id); err != nil {
		return nil, err
	}
	return &Deletion{a: a, p: p, id: id, proof: proof, proven: -1}, nil
}

// Read reads the account at SERIAL (after an admin's lost round, once
// the account's own changes are held back). Begun: it is deleting or deleted
// already, and u is as it stands (there is nothing to write): finishing a
// deletion under way asks for nothing, as it was allowed when it began
// and the password is gone once the account is deleted. Otherwise the
// caller may take it over, decided on this version before anything is
// written (mayTakeOver): the user proves the current password (once per
// password), and an admin may not delete another admin.
func (d *Deletion) Read(ctx context.Context) (u domain.User, begun bool, err error) {
	if d.lost != "" {
		// An admin's last round lost to another change: the account's
		// own changes give way for a moment, so that its user cannot keep
		// the deletion from beginning by changing his account over and
		// over, signing out everywhere above all (as for a suspension,
		// docs/design/suspension.md). A hold that failed only slows this.
		_, _ = d.a.users.Hold(ctx, d.id, d.lost, domain.HoldFor)
	}
	u, err = d.a.users.GetSerial(ctx, d.id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && u.Status == domain.StatusPending) {
		return domain.User{}, false, domain.ErrUserNotFound
	}
	if err != nil {
		return domain.User{}, false, err
	}
	if u.Status == domain.StatusDeleting || u.Status == domain.StatusDeleted {
		return u, true, nil
	}
	if d.p.UserID == d.id {
		// The owner's deletion is decided on the row it writes over: a
		// suspension (or a reset, a sign-out everywhere else) that landed
		// since the request was let through stopped its session there,
		// and the deletion does not begin after it
		// (TestASuspendedMembersDeletionInFlightDoesNotLand).
		if ok, err := d.a.stillAdmits(ctx, u.Access(), d.p.Session); err != nil || !ok {
			return domain.User{}, false, cmp.Or[error](err, domain.ErrNoSession)
		}
	}
	if !(d.p.UserID == d.id && d.proven == u.PasswordEpoch) {
		if err := d.a.mayTakeOver(ctx, d.p, u, d.proof); err != nil {
			return domain.User{}, false, err
		}
		d.proven = u.PasswordEpoch
	}
	d.before = u
	return u, false, nil
}

// Stage makes the round's compare-and-set on the account Read found: the
// status deleting, recording when, by whom and the attempt's tag
// (domain.Deletion). The suspension stays in the row until MarkDeleted:
// it is what the deletion's suspension step erases by key (and records
// in the history). An admin's deletion of another's account carries its
// audit entry in the row (the entries the row carried before are written
// first), written once the compare-and-set applied (and by MarkDeleted,
// from the row, whatever happened in between). It returns the attempt's
// index entry, to be recorded before Apply.
func (d *Deletion) Stage(ctx context.Context) (DeletionEntry, error) {
	u, now, by := d.before, d.a.now(), d.p.UserID
	next := u
	next.Status = domain.StatusDeleting
	next.Deletion = &domain.Deletion{At: now, By: by, Attempt: domain.NewAttempt()}
	next.Version, next.UpdatedAt = u.Version+1, now
	var audited []domain.AuditEntry
	if by != d.id {
		e := adminEntry(d.p, u, domain.AuditDeleted)
		e.At = now
		audited = []domain.AuditEntry{e}
		if err := domain.CarryAdminChange(ctx, d.a.audit, &next, audited); err != nil {
			return DeletionEntry{}, err
		}
	}
	d.next, d.audited = next, audited
	return entryOf(next, u), nil
}

// Apply sends the compare-and-set Stage made. Not applied: another
// change won, and this attempt never began a deletion. An error: the
// outcome is unknown (the account may be deleting now or later).
func (d *Deletion) Apply(ctx context.Context) (_ domain.User, applied bool, _ error) {
	applied, err := d.a.users.Update(ctx, d.next)
	if err == nil && !applied && d.p.UserID != d.id {
		d.lost = d.next.Deletion.Attempt
	}
	if err != nil || !applied {
		return domain.User{}, false, err
	}
	d.a.recordApplied(ctx, d.audited)
	return d.next, true, nil
}

// Account reads account id as it stands (ErrNotFound when there is
// none), for the workflows: a deletion hands a group on to a member whose
// account is active.
func (a *Service) Account(ctx context.Context, id string) (domain.User, error) {
	return a.users.Get(ctx, id)
}

// AccountSerial reads account id at SERIAL (the latest committed state,
// finishing any transaction in flight): a repair decides on it whether
// a deletion took effect.
func (a *Service) AccountSerial(ctx context.Context, id string) (domain.User, error) {
	return a.users.GetSerial(ctx, id)
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
// found in it. It answers a read or release that failed: the entry is
// the only record of those keys, so the deletion keeps it until the
// release is proven, and the next pass gives them back
// (TestADeletionWhoseNameReleaseFailedLeavesNoClaimOfIt).
func (a *Service) ReleaseNames(ctx context.Context, e DeletionEntry) error {
	return a.claimer.ReleaseOld(ctx, entryKeys(e), e.UserID, domain.NoLaterChange)
}

// SessionsOf lists the index entries of every session of the account,
// each for EndSession: a deletion's job ends them a page at a time,
// reporting each page to its lease, since a user may hold tens of
// thousands (TestAWorkerKeepsADeletionsLeaseThroughItsSessions).
func (a *Service) SessionsOf(ctx context.Context, id string) ([]domain.Session, error) {
	return a.sessions.Entries(ctx, id)
}

// EndSession ends one session of SessionsOf: the session, then its
// index entries.
func (a *Service) EndSession(ctx context.Context, s domain.Session) error {
	return a.sessions.Delete(ctx, s)
}

// EndFactors removes every factor of the account, pending or confirmed,
// and ends its recovery set: a deleted account keeps no secret,
// credential, code or factor name of its user's. Idempotent; a factor
// written after it (a confirmation in flight) is removed by its own
// check at the end (confirmedBy: no session of a deleted account works),
// and an enrolment begun before it expires with its TTL. The set is not
// deleted but replaced by a fence without codes (RecoveryEnded), in
// place of the generation read or of none: every write of a set is
// conditioned on the one it replaces, so a set of a request in flight
// (NewRecoveryCodes, a first factor's confirmation) lands on nothing,
// however late, and no request replaces the fence (setRecovery). The
// factors are read again until a read finds none and the fence
// (TestNewRecoveryCodesInFlightOutliveNoDeletion,
// TestALateFirstSetOutlivesNoDeletion). A service run without factors
// ends those written while it had them (Config.FactorRows).
func (a *Service) EndFactors(ctx context.Context, id string) error {
	rows := a.factorRows()
	if rows == nil {
		return nil
	}
	for range maxChangeAttempts {
		factors, set, err := rows.Read(ctx, id)
		if err != nil || (len(factors) == 0 && set.Ended()) {
			return err
		}
		for _, f := range factors {
			if _, err := rows.Remove(ctx, id, f.ID); err != nil {
				return err
			}
		}
		if !set.Ended() {
			fence := RecoverySet{UserID: id, Generation: RecoveryEnded, Used: map[string]string{}, CreatedAt: a.now()}
			if _, err := rows.SetRecovery(ctx, fence, set.Generation); err != nil {
				return err
			}
		}
	}
	return domain.ErrBusy
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
// data goes (names, email and whether it was verified, an address asked
// for or held for a revert, a username held, the addresses whose readers refused it,
// display name, password hash, roles, the suspension, and the audit
// entries the row carried, once written); the
// id, the version, the deletion, the moderation history and the audit
// stay. The keys the row names in a hold (a username held, an address
// asked for or held for a revert) stay in it, and nothing else of them,
// until ReleaseHeld has given their claims back: the row is their only
// record (the deletion's entry records the account's own two), so a
// process that stopped, or a release that failed, after this
// compare-and-set would otherwise leave those claims naming the deleted
// account for good (TestADeletionStoppedAfterItsMarkLeavesNoClaimOfANameItHeld).
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
		u.PendingEmail, u.PendingEmailAt, u.PendingEmailSession = "", time.Time{}, ""
		u.RecoveryEmail, u.RecoveryUntil = "", time.Time{}
		u.HeldUsername, u.HeldUsernameUntil = "", time.Time{}
		u.RefusedEmailKeys = nil
		u.PasswordResetRequired = false
		return u, true, nil
	})
	return err
}

// RecordCarried writes the audit entries u, an account being deleted,
// still carries (an admin's change whose write of them failed or never
// came, the deletion of another's account itself): its job does so before
// its steps, so that the audit of every account, which reads no account
// row, lists them while the job goes on, however long it takes or stays
// stuck (the sweeper leaves an account being deleted to its deletion;
// MarkDeleted writes them again before it clears them). Every write of an
// entry is the same row, so a repeat adds none.
func (a *Service) RecordCarried(ctx context.Context, u domain.User) error {
	if u.Status != domain.StatusDeleting || len(u.AdminChange) == 0 {
		return nil
	}
	return a.audit.Record(ctx, u.AdminChange)
}

// ReleaseHeld gives back the claims of the keys a deleted account's row
// still names in a hold (MarkDeleted keeps them for this), each only
// while it is still the account's committed claim, and then clears them
// from the row: only once every release is proven, so a failure leaves
// them for the next run. An account not deleted, or naming none, is left
// as it is. From status deleted the claimer takes these keys over
// anyway (Holder), so they are free meanwhile; this only leaves no claim
// and no key of the user's behind.
func (a *Service) ReleaseHeld(ctx context.Context, id string) error {
	u, err := a.users.GetSerial(ctx, id)
	if err != nil || u.Status != domain.StatusDeleted {
		return err
	}
	held := heldKeys(u)
	if len(held) == 0 {
		return nil
	}
	if err := a.claimer.ReleaseOld(ctx, held, id, domain.NoLaterChange); err != nil {
		return err
	}
	_, err = a.updateAccount(ctx, id, func(u domain.User) (domain.User, bool, error) {
		if u.Status != domain.StatusDeleted || len(heldKeys(u)) == 0 {
			return u, false, nil
		}
		u.PendingEmailKey, u.RecoveryEmailKey, u.HeldUsernameKey = "", "", ""
		return u, true, nil
	})
	return err
}

// heldKeys are the keys u names in a hold, whether or not it has ended:
// the username its owner's rename left, the address it asked for, the
// address held for a revert. Its own username and email are not among
// them (a deletion's entry records those).
func heldKeys(u domain.User) []domain.Key {
	var keys []domain.Key
	if u.HeldUsernameKey != "" && u.HeldUsernameKey != u.UsernameKey {
		keys = append(keys, domain.Key{Kind: domain.KindUsername, Key: u.HeldUsernameKey, Field: "username"})
	}
	for _, k := range []string{u.PendingEmailKey, u.RecoveryEmailKey} {
		if k != "" && k != u.EmailKey && !slices.ContainsFunc(keys, func(h domain.Key) bool { return h.Kind == domain.KindEmail && h.Key == k }) {
			keys = append(keys, domain.Key{Kind: domain.KindEmail, Key: k, Field: "email"})
		}
	}
	return keys
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
