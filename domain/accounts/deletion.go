package accounts

import (
	"context"
	"errors"
	"slices"
	"time"

	"shelf/domain"
)

// Deleting an account (DELETE /v1/users/{id}, docs/design.md#deletion).
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
// records (issue 24: two attempts shared one entry, and the loser's end
// left the winner's deletion where no repair could find it).

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

// of reports whether e is the entry of the deletion d recorded in the
// account row (the attempt whose compare-and-set applied).
func (e DeletionEntry) of(d domain.Deletion) bool {
	return e.Attempt == d.Attempt && e.At.Equal(d.At)
}

// DeletionStore keeps the index of deletions in progress, one entry per
// attempt (UserID, At, Attempt).
type DeletionStore interface {
	// Begin records an attempt of a deletion; writing it again is harmless.
	Begin(ctx context.Context, d DeletionEntry) error
	// Get reads the entry of the attempt that began userID's deletion d
	// (ErrNotFound when there is none).
	Get(ctx context.Context, userID string, d domain.Deletion) (DeletionEntry, error)
	// End deletes this attempt's entry, never another's; a Begin of it
	// landing late never outlives it.
	End(ctx context.Context, d DeletionEntry) error
	// InProgress calls fn with every entry, from the index's start on, and
	// moves the start up past the days it read empty.
	InProgress(ctx context.Context, fn func(DeletionEntry) error) error
}

// GroupMembership is one of the user's groups as a deletion sees it.
type GroupMembership struct {
	GroupID string
	// Manager: the user is one of the group's managers.
	Manager bool
	// Members and Managers are the group's counts, at Version.
	Members, Managers int
	Version           int
	// Pending: a membership change is recorded and not yet finished, so
	// the counts are not settled.
	Pending bool
}

// Groups is what a deletion needs of groups (domain/groups, wired in
// internal/app).
type Groups interface {
	// Memberships lists the user's groups with the counts of each.
	Memberships(ctx context.Context, userID string) ([]GroupMembership, error)
	// Leave takes the user out of the group, as the user would; the
	// group's own error when it refuses (last_manager), ErrNotFound when
	// the user is not a member or the group is gone.
	Leave(ctx context.Context, groupID, userID string) error
	// OtherMembers lists up to limit members of the group other than the
	// user, as the user may see them.
	OtherMembers(ctx context.Context, groupID, userID string, limit int) ([]string, error)
	// Promote makes member a manager of the group, as by (a manager).
	Promote(ctx context.Context, groupID, by, member string) error
	// CloseAlone closes the group if the user is its only member (decided
	// on the group row); last_manager when it has others, ErrNotFound when
	// the user is not in it.
	CloseAlone(ctx context.Context, groupID, userID string) error
}

// LibraryItem is an entry of the user's library: an item shared with the
// user directly, and the user's role.
type LibraryItem struct {
	ContentID string
	Role      string
}

// Library is what a deletion needs of content (domain/library, wired in
// internal/app). Deletes and unshares go through the content's own change
// path, so member counts stay exact and every library follows.
type Library interface {
	// Items lists the user's library index after content id after.
	Items(ctx context.Context, userID, after string, limit int) ([]LibraryItem, error)
	// Creator returns who made the item (ErrNotFound when it is gone).
	Creator(ctx context.Context, p domain.Principal, contentID string) (string, error)
	// Delete deletes the item, as p.
	Delete(ctx context.Context, p domain.Principal, contentID string) error
	// Unshare takes principalID off the item, as p.
	Unshare(ctx context.Context, p domain.Principal, contentID, principalID string) error
	// Prune deletes every row of the principal's library its index does
	// not back.
	Prune(ctx context.Context, principalID string) error
}

// SuspensionRecords erases a suspension's derived records (the list row,
// the reverse lookup, the expiry entry), at the account's version, and
// writes the history entries a deletion must not lose.
type SuspensionRecords interface {
	Lookup(ctx context.Context, userID string) (domain.Suspension, error)
	Erase(ctx context.Context, s domain.Suspension, version int) error
	// RecordSuspended writes the suspension's history entry.
	RecordSuspended(ctx context.Context, s domain.Suspension, version int) error
	// RecordLift writes the history entries of a lift.
	RecordLift(ctx context.Context, l domain.Lift, version int) error
}

// DeletionDeps are what deleting an account needs beyond the accounts'
// own stores.
type DeletionDeps struct {
	Index       DeletionStore
	Groups      Groups
	Library     Library
	Suspensions SuspensionRecords
}

// SetDeletion wires account deletion (the services it needs are built
// after this one).
func (a *Service) SetDeletion(d DeletionDeps) { a.del = d }

// The refusals of a deletion.
var (
	// errLastManager lists the groups the user must hand over first.
	errLastManager = func(fields []domain.FieldError) error {
		return &domain.Error{Kind: domain.ErrConflict, Code: "last_manager", Fields: fields,
			Message: "You are the last manager of some groups: make another member a manager first."}
	}
)

// itemPage is how many library entries a deletion reads at a time.
const itemPage = 100

// DeleteUser deletes an account, by the user or an active admin. A
// deletion already under way is finished; one already done answers nil
// (after sweeping the steps again, which finds nothing to do unless a
// write landed late). The caller's own session (when the user deletes
// themself) is ended last, so a retry of the user's whose answer was lost
// still authenticates while anything is left to do (see Authenticate).
//
// The user proves the current password (reauth.go); an admin gives none,
// and may not delete another admin. Finishing a deletion already under
// way asks for nothing: it was allowed when it began, and the password
// is gone once the account is deleted.
func (a *Service) DeleteUser(ctx context.Context, p domain.Principal, id string, currentPassword *string) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	if !domain.ValidID(id, domain.UserIDPrefix) {
		return domain.ErrUserNotFound
	}
	keep := ""
	if p.UserID == id {
		keep = p.Session.TokenHash
	} else if _, err := a.RequireAdmin(ctx, p); err != nil {
		return err
	}
	u, err := a.beginDeletion(ctx, id, p, currentPassword)
	if err != nil {
		return err
	}
	return a.finishDeletion(ctx, u, keep)
}

// beginDeletion moves the account to deleting (or finds it deleting or
// deleted) and returns it as it then stands. The last-manager check comes
// first, before anything is written; the index entry before the
// compare-and-set. An admin's deletion of another's account carries its
// audit entry in the row, written once the compare-and-set applied (and
// by markDeleted, from the row, whatever happened in between). The user
// proves the current password, an admin may not delete another admin
// (mayTakeOver), before anything else.
func (a *Service) beginDeletion(ctx context.Context, id string, p domain.Principal, currentPassword *string) (domain.User, error) {
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
			if err := a.mayTakeOver(ctx, p, u, currentPassword); err != nil {
				return false, err
			}
			proven = u.PasswordEpoch
		}
		if done, err := a.checkGroups(ctx, id); !done || err != nil {
			return false, err
		}
		now := a.now()
		next := u
		// The suspension stays in the row until markDeleted: it is what
		// eraseSuspension erases by key (and records in the history).
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
		if err := a.del.Index.Begin(ctx, entry); err != nil {
			// This attempt sends no compare-and-set: its entry, if the
			// write landed, is ended now (else the repair's).
			return false, errors.Join(err, a.del.Index.End(ctx, entry))
		}
		if err := a.deletionStep("entry"); err != nil {
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
			return false, a.del.Index.End(ctx, entry)
		}
		a.recordApplied(ctx, audited)
		out = next
		return true, nil
	})
	return out, err
}

// entryOf is the index entry of next's deletion; keys come from the
// account as it was before (a deleted row has none).
func entryOf(next, before domain.User) DeletionEntry {
	return DeletionEntry{UserID: next.ID, Attempt: next.Deletion.Attempt, At: next.Deletion.At, By: next.Deletion.By,
		UsernameKey: before.UsernameKey, EmailKey: before.EmailKey}
}

// checkGroups refuses (409 last_manager) while the user is the last
// manager of a group with other members (promote one first); a group the
// user is alone in is closed with the account (leaveGroups). Like every refusal of a
// group change it rests on one state of each group: the groups are read
// again, and the refusal stands only if those groups are at the same
// versions with nothing pending; otherwise done is false and the caller
// decides again.
func (a *Service) checkGroups(ctx context.Context, id string) (done bool, err error) {
	blocking := func(ms []GroupMembership) (out []GroupMembership, unsettled bool) {
		for _, m := range ms {
			if m.Pending {
				unsettled = true
			}
			if m.Manager && m.Managers <= 1 && m.Members > 1 {
				out = append(out, m)
			}
		}
		return out, unsettled
	}
	ms, err := a.del.Groups.Memberships(ctx, id)
	if err != nil {
		return false, err
	}
	found, unsettled := blocking(ms)
	if unsettled {
		return false, nil
	}
	if len(found) == 0 {
		return true, nil
	}
	again, err := a.del.Groups.Memberships(ctx, id)
	if err != nil {
		return false, err
	}
	for _, m := range found {
		i := slices.IndexFunc(again, func(n GroupMembership) bool { return n.GroupID == m.GroupID })
		if i < 0 || again[i].Version != m.Version || again[i].Pending {
			return false, nil // moved: decide again
		}
	}
	fields := make([]domain.FieldError, len(found))
	for i, m := range found {
		fields[i] = domain.FieldError{Field: "groups", Code: "last_manager",
			Message: m.GroupID + ": you are its only manager; make another member a manager first"}
	}
	return true, errLastManager(fields)
}

// finishDeletion carries out the steps of the deletion of u (deleting or
// deleted), each idempotent: what a crash left, any step may do again.
// keep is the caller's own session, ended last. The entry it writes again
// and ends is the one of the attempt that began the deletion (the row's).
func (a *Service) finishDeletion(ctx context.Context, u domain.User, keep string) error {
	id := u.ID
	entry := DeletionEntry{UserID: id, Attempt: u.Deletion.Attempt, At: u.Deletion.At, By: u.Deletion.By,
		UsernameKey: u.UsernameKey, EmailKey: u.EmailKey}
	if u.Status == domain.StatusDeleting {
		// Again, in case the first write of it was lost: the repair finds
		// the deletion through it until it is done.
		if err := a.del.Index.Begin(ctx, entry); err != nil {
			return err
		}
	}
	self := domain.Principal{UserID: id, Account: &u}
	steps := []struct {
		name string
		run  func() error
	}{
		{"sessions", func() error { return a.sessions.DeleteAll(ctx, id, keep) }},
		{"suspension", func() error { return a.eraseSuspension(ctx, u) }},
		{"groups", func() error { return a.leaveGroups(ctx, id) }},
		{"items", func() error { return a.leaveItems(ctx, self) }},
		{"library", func() error { return a.del.Library.Prune(ctx, id) }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return err
		}
		if err := a.deletionStep(s.name); err != nil {
			return err
		}
	}
	if u.Status == domain.StatusDeleting {
		if err := a.markDeleted(ctx, id); err != nil {
			return err
		}
		if err := a.deletionStep("deleted"); err != nil {
			return err
		}
	}
	entry, found, err := a.releaseNames(ctx, u, entry)
	if err != nil {
		return err
	}
	// Then the caller's own session: until here its retry could finish
	// what is left. The index entry ends last, so a deletion whose last
	// writes failed is still the repair's to finish, the caller's session
	// included.
	if err := a.sessions.DeleteAll(ctx, id, ""); err != nil {
		return err
	}
	if !found {
		return nil
	}
	return a.del.Index.End(ctx, entry)
}

// releaseNames gives back the names of a deleted account (each only while
// it is still its committed claim, with the op found in it) and returns
// the index entry to end. The keys of an account that was deleting when
// this call began are in entry; a deleted row has none, so they are read
// from the index entry, and without one (found false) the deletion was
// finished before (or its names are taken over anyway: Holder).
func (a *Service) releaseNames(ctx context.Context, u domain.User, entry DeletionEntry) (_ DeletionEntry, found bool, _ error) {
	if u.Status == domain.StatusDeleted {
		stored, err := a.del.Index.Get(ctx, u.ID, *u.Deletion)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			return entry, false, nil
		case err != nil:
			return entry, false, err
		}
		entry = stored
	}
	a.claimer.ReleaseOld(ctx, entryKeys(entry), u.ID)
	if err := a.deletionStep("claims"); err != nil {
		return entry, true, err
	}
	return entry, true, nil
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

// markDeleted is the compare-and-set deleting -> deleted: the personal
// data goes (names, email and whether it was verified, display name,
// password hash, roles, and the audit entries the row carried, once
// written); the id, the version, the deletion, the moderation history and
// the audit stay.
func (a *Service) markDeleted(ctx context.Context, id string) error {
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
		u.PendingEmail, u.PendingEmailKey, u.PendingEmailAt = "", "", time.Time{}
		u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "", "", time.Time{}
		return u, true, nil
	})
	return err
}

// eraseSuspension ends what a suspension leaves in moderation's records.
// The suspension the deletion ended is still in the deleting row: its
// history entry is written (a deletion is no lift, whose entries would
// carry it; S5), and its records are erased by their keys at the
// account's version, found or not: a suspension racing the deletion
// writes them at its own, older version, so they are shadowed wherever
// they land. The last lift's entries are written again (a lift stopped
// after its compare-and-set may have left them). Then whatever the
// reverse lookup still names (an older suspension's leftovers, or the
// suspension of a row deleted before it kept it) goes the same way.
func (a *Service) eraseSuspension(ctx context.Context, u domain.User) error {
	if s := u.Suspension; s != nil {
		if err := a.endSuspension(ctx, *s, u.Version); err != nil {
			return err
		}
	}
	if l := u.LastLift; l != nil {
		if err := a.del.Suspensions.RecordLift(ctx, *l, u.Version); err != nil {
			return err
		}
	}
	s, err := a.del.Suspensions.Lookup(ctx, u.ID)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	return a.endSuspension(ctx, s, u.Version)
}

// endSuspension writes the history entry of a suspension the deletion
// ended, then erases its records.
func (a *Service) endSuspension(ctx context.Context, s domain.Suspension, version int) error {
	if err := a.del.Suspensions.RecordSuspended(ctx, s, version); err != nil {
		return err
	}
	return a.del.Suspensions.Erase(ctx, s, version)
}

// leaveGroups takes the user out of every group (leaveGroup).
func (a *Service) leaveGroups(ctx context.Context, id string) error {
	ms, err := a.del.Groups.Memberships(ctx, id)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := a.leaveGroup(ctx, m.GroupID, id); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return err
		}
	}
	return nil
}

// leaveRounds bounds how often leaving one group decides again after a
// refusal; past it the deletion answers 409 and its retry goes on.
const leaveRounds = 3

// leaveGroup takes the user out of one group. The check before the
// deletion began left no group of which the user is the last manager, but
// a change since may have made them so: another manager left while this
// one still counted (the group is handed to another member, an active one
// first: handOver; so no group is left without a manager), or every other
// member left (the group is closed with the account: CloseAlone, decided
// on the group row, docs/design.md#closing; so a deletion never stops
// there for good). Each refusal decides again on the group as it then is.
func (a *Service) leaveGroup(ctx context.Context, groupID, id string) error {
	var err error
	for range leaveRounds {
		if err = a.del.Groups.Leave(ctx, groupID, id); !isLastManager(err) {
			return err
		}
		others, oerr := a.del.Groups.OtherMembers(ctx, groupID, id, itemPage)
		if oerr != nil {
			return oerr
		}
		if len(others) == 0 {
			if err = a.del.Groups.CloseAlone(ctx, groupID, id); !isLastManager(err) {
				return err
			}
			continue // someone joined: hand it over
		}
		if err = a.handOver(ctx, groupID, id, others); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return err
		}
	}
	return err
}

// isLastManager reports a group's last_manager refusal.
func isLastManager(err error) bool {
	var refusal *domain.Error
	return errors.As(err, &refusal) && refusal.Code == "last_manager"
}

// handOver makes one of the other members of the group a manager: one
// whose account is active; only when every visible one is suspended, one
// of those (nobody else could manage the group, and waiting for a
// suspension that may never end would leave this account deleting, its
// names held, for good; the suspended manager acts once it is lifted, and
// its own deletion hands the group on again). With no visible member (all
// of them are being deleted too), the deletion waits for theirs (409
// last_manager; its retry goes on).
func (a *Service) handOver(ctx context.Context, groupID, id string, others []string) error {
	suspended := ""
	for _, o := range others {
		u, err := a.users.Get(ctx, o)
		switch {
		case err != nil || !u.Visible():
		case u.Status == domain.StatusActive:
			return a.del.Groups.Promote(ctx, groupID, id, o)
		case suspended == "":
			suspended = o
		}
	}
	if suspended != "" {
		return a.del.Groups.Promote(ctx, groupID, id, suspended)
	}
	return errLastManager([]domain.FieldError{{Field: "groups", Code: "last_manager",
		Message: groupID + ": every other member is being deleted; try again once they are gone"}})
}

// leaveItems deletes the items the user owns (made them and manages them,
// or is the last manager of) and takes the user off every other item,
// through content's own change path: every library follows, and the
// owners' member counts stay exact.
func (a *Service) leaveItems(ctx context.Context, self domain.Principal) error {
	after := ""
	for {
		items, err := a.del.Library.Items(ctx, self.UserID, after, itemPage)
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := a.leaveItem(ctx, self, it); err != nil && !errors.Is(err, domain.ErrNotFound) {
				return err
			}
		}
		if len(items) < itemPage {
			return nil
		}
		after = items[len(items)-1].ContentID
	}
}

// leaveItem deletes one item the user owns, or leaves it.
func (a *Service) leaveItem(ctx context.Context, self domain.Principal, it LibraryItem) error {
	if it.Role == roleManager {
		creator, err := a.del.Library.Creator(ctx, self, it.ContentID)
		if err != nil {
			return err
		}
		if creator == self.UserID {
			return a.del.Library.Delete(ctx, self, it.ContentID)
		}
	}
	err := a.del.Library.Unshare(ctx, self, it.ContentID, self.UserID)
	var refusal *domain.Error
	if errors.As(err, &refusal) && refusal.Code == "last_manager" {
		// Nobody else manages it: it is the user's to take away.
		return a.del.Library.Delete(ctx, self, it.ContentID)
	}
	return err
}

// roleManager is content's manager role (domain/library.RoleManager).
const roleManager = "manager"

// deletionStep calls the test hook of a deletion step.
func (a *Service) deletionStep(step string) error {
	if a.Hooks.AfterDeletionStep == nil {
		return nil
	}
	return a.Hooks.AfterDeletionStep(step)
}

// DeletionReport is what RepairDeletions found and did.
type DeletionReport struct {
	// Found counts the entries of deletions in progress read.
	Found int
	// Finished counts deletions finished (deleted, names released).
	Finished int
	// Stale counts entries of deletions that never began (their
	// compare-and-set lost), removed.
	Stale int
	// Problems says what was found, one line each.
	Problems []string
}

// staleEntryAge is how old an entry of an account that is not being
// deleted must be before the repair removes it: younger, its
// compare-and-set may still be in flight.
const staleEntryAge = 10 * time.Minute

// fenceDeletion moves a visible account's version on (a compare-and-set
// that changes nothing else) before the repair removes the entry of a
// deletion that did not take effect: that deletion's compare-and-set,
// still on its way however late (a hung node's queue), was decided on an
// older version and can no longer land, so no account is left deleting
// without the entry that lets the repair finish it (gap 20, as the
// closings repair fences a group). An account deleting by now keeps its
// entry for the next repair; one gone or never activated needs no fence.
func (a *Service) fenceDeletion(ctx context.Context, id string) error {
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

// RepairDeletions finishes every deletion a crash or a lost answer left
// in progress (`api admin repair-deletions`): it reads the index of
// deletions in progress, not the accounts, and finishes each from the
// account row as any retry would. dryRun only reports.
func (a *Service) RepairDeletions(ctx context.Context, dryRun bool) (DeletionReport, error) {
	var r DeletionReport
	var errs []error
	err := a.del.Index.InProgress(ctx, func(d DeletionEntry) error {
		r.Found++
		u, err := a.users.GetSerial(ctx, d.UserID)
		switch {
		case err != nil && !errors.Is(err, domain.ErrNotFound):
			errs = append(errs, err)
			return nil
		case err == nil && (u.Status == domain.StatusDeleting || u.Status == domain.StatusDeleted):
			r.Problems = append(r.Problems, "deletion of "+d.UserID+" begun at "+d.At.Format(time.RFC3339)+" is "+string(u.Status)+": finishing it")
			if dryRun {
				return nil
			}
			if err := a.finishDeletion(ctx, u, ""); err != nil {
				errs = append(errs, err)
				return nil
			}
			if !d.of(*u.Deletion) {
				// An entry of an attempt whose compare-and-set lost to
				// the one that began the deletion: decided on an older
				// version, it can never apply now.
				errs = append(errs, a.del.Index.End(ctx, d))
			}
			r.Finished++
		case a.cfg.Now().Sub(d.At) < staleEntryAge:
			// Its compare-and-set may still be on its way.
		default:
			r.Problems = append(r.Problems, "deletion of "+d.UserID+" begun at "+d.At.Format(time.RFC3339)+" never took effect: removing its entry")
			if dryRun {
				return nil
			}
			if err := a.fenceDeletion(ctx, d.UserID); err != nil {
				errs = append(errs, err)
				return nil
			}
			if err := a.del.Index.End(ctx, d); err != nil {
				errs = append(errs, err)
				return nil
			}
			r.Stale++
		}
		return nil
	})
	return r, errors.Join(append(errs, err)...)
}
