package moderation

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// Suspend suspends an account (admins only, not themselves, never another
// admin: errOtherAdmin, decided on the account as read at SERIAL, so a
// role granted meanwhile moves the version and the suspension decides
// again). The account row changes first, by compare-and-set on its
// version: that is the guard of S1 and the point where the suspension
// takes effect, every session ended with it (a new password epoch: S3).
// Then the list's records are written. A suspension that was interrupted after the
// compare-and-set is finished by the next Suspend of the same user (which
// answers 409) or by the sweeper's FinishInterrupted, which finds it by
// the attempt recorded before the compare-and-set (attempts.go).
func (m *Service) Suspend(ctx context.Context, p domain.Principal, userID string, in SuspendInput) (_ domain.Suspension, err error) {
	admin, err := m.admins.RequireAdmin(ctx, p)
	if err != nil {
		return domain.Suspension{}, err
	}
	now := m.now()
	reason, err := checkSuspend(in, now, admin.ID, userID)
	if err != nil {
		return domain.Suspension{}, err
	}
	if !domain.ValidID(userID, domain.UserIDPrefix) {
		return domain.Suspension{}, domain.ErrUserNotFound
	}
	a, err := m.begin(ctx, userID, ActionSuspend)
	if err != nil {
		return domain.Suspension{}, err
	}
	// unwritten is the failed write of the suspension's entry: the
	// attempt then stays for the sweeper, which writes it from the row.
	var unwritten error
	defer func() {
		if unwritten == nil {
			m.end(ctx, a, err)
		}
	}()
	var s domain.Suspension
	var finished *domain.Suspension
	var audited []domain.AuditEntry
	// left is the row the suspension was written over when it dropped
	// holds that had ended (nil: none), whose claims go back once it
	// applied.
	var left *domain.User
	decide := func(u domain.User) (domain.User, error) {
		audited, finished, left = nil, nil, nil
		if u.IsAdmin() {
			return u, errOtherAdmin
		}
		if u.Status == domain.StatusSuspended && u.Suspension != nil {
			// Finish whatever an interrupted Suspend left undone.
			if err := m.finishSuspension(ctx, *u.Suspension, u.Version); err != nil {
				return u, err
			}
			finished = u.Suspension
			if err := domain.CarryAdminChange(ctx, m.audit, &u, nil); err != nil {
				return u, err
			}
			// Answered already_suspended once this round's fence (the
			// row as read, at the next version) applied: a lift decided
			// on the row read, whose compare-and-set is held at a node,
			// can no longer land after the answer
			// (TestAnAnswerThatTheUserIsNotSuspendedOutlivesALateSuspension).
			// Every round fences what it read: one after a lost
			// compare-and-set reads the row the write it lost to left,
			// on which a lift may have been decided too
			// (TestAnAnswerAfterALostFenceOutlivesALateChangeDecidedSince).
			return u, nil
		}
		// Erase what an interrupted lift (Unsuspend, sweeper) left of the
		// last suspension, before this one's records take its lookup: after
		// that, nothing would find the old list row (S2).
		if err := m.eraseLeftovers(ctx, u); err != nil {
			return u, err
		}
		// The next lift overwrites the account's last one: its history
		// entries are written before this suspension can lead there (an
		// interrupted lift left them to whoever came next).
		at := now
		if l := u.LastLift; l != nil {
			if err := m.suspensions.RecordLift(ctx, *l, u.Version); err != nil {
				return u, err
			}
			at = after(now, l.At)
		}
		if in.Until != nil && !in.Until.UTC().Truncate(time.Millisecond).After(at) {
			// The start is after the last lift, whose time may be a
			// clock's ahead of this one: an until checked against now
			// alone would end the suspension before it began, and every
			// record of it say so
			// (TestASuspensionAfterALiftAheadNeverEndsBeforeItBegins).
			return u, untilNotAfter(at)
		}
		s = domain.Suspension{UserID: u.ID, Username: u.Username, Reason: reason, SuspendedAt: at,
			SuspendedBy: admin.ID, Bucket: BucketOf(at, m.cfg.BucketSize)}
		if in.Until != nil {
			s.Until = in.Until.UTC().Truncate(time.Millisecond)
		}
		// Holds that ended before it are dropped, as the account's own
		// writes drop them: in the row, a suspension would bring them back
		// while it stands and for the hold's length after it ends, for a
		// name its owner had the whole hold to take back.
		before := u
		if dropped, ended := m.admins.DropEndedHolds(u); ended {
			u, left = dropped, &before
		}
		u.Status, u.Suspension, u.UpdatedAt = domain.StatusSuspended, &s, now
		// A new password epoch: every session stops in this write, and
		// stays stopped after a lift, however many there are (their rows
		// expire with their TTL, never listed: decision 0078).
		u.PasswordEpoch, u.PasswordSession = u.PasswordEpoch+1, ""
		audited = []domain.AuditEntry{{UserID: u.ID, At: s.SuspendedAt, Version: u.Version + 1, Action: domain.AuditSuspended,
			Actor: admin.ID, Via: domain.ViaAPI, From: p.From, Reason: s.Reason, Until: s.Until}}
		return u, domain.CarryAdminChange(ctx, m.audit, &u, audited)
	}
	next, err := m.changeAccount(ctx, userID, &a, decide)
	if err == nil && finished != nil {
		err = errAlreadySuspended // the round found it suspended and fenced it
	}
	if errors.Is(err, errAlreadySuspended) && finished != nil {
		ended, lerr := m.liftEnded(ctx, *finished)
		if lerr != nil {
			return domain.Suspension{}, lerr
		}
		if ended {
			// The suspension found had ended (the sweeper not there yet):
			// it blocked nothing (S3) and is lifted now, and this request,
			// whose own until is in the future, is no retry of it: it
			// decides again on the lifted row, under an entry of its own
			// (the lift may have been slow past the sweeper's fence and
			// end of the first: TestASuspensionAfterAnEndedOneHasItsOwnEntry);
			// the first round changed nothing.
			prev := a
			if a, err = m.begin(ctx, userID, ActionSuspend); err != nil {
				return domain.Suspension{}, err
			}
			_ = m.cfg.Attempts.End(ctx, prev)
			next, err = m.changeAccount(ctx, userID, &a, decide)
			if err == nil && finished != nil {
				err = errAlreadySuspended
			}
			if errors.Is(err, errAlreadySuspended) && finished != nil {
				if lerr := m.liftIfEnded(ctx, *finished); lerr != nil {
					return domain.Suspension{}, lerr
				}
			}
		}
	}
	if err != nil {
		return domain.Suspension{}, err
	}
	if err := m.hook("suspend", "cas"); err != nil {
		return domain.Suspension{}, err
	}
	unwritten = m.recordApplied(ctx, audited)
	if left != nil {
		m.admins.ReleaseLeft(ctx, *left, next)
	}
	if err := m.finishSuspension(ctx, s, next.Version); err != nil {
		return domain.Suspension{}, err
	}
	// A request slow past the suspension's end wrote its expiry entry
	// behind the sweeper's start: it lifts it, as any finisher does
	// (TestASuspensionWhoseRecordsComeAfterItsEndIsLifted).
	if err := m.liftIfEnded(ctx, s); err != nil {
		return domain.Suspension{}, err
	}
	return s, nil
}

// latestUntil bounds a suspension's until: every time told from it (its
// own, a username hold's end, which adds up to 20 years) stays before
// year 10000: RFC 3339 writes a year in four digits.
var latestUntil = time.Date(9900, 1, 1, 0, 0, 0, 0, time.UTC)

// reasonRule: a suspension's reason is 1-500 characters as sent, white
// space at either end refused (not trimmed), line breaks and tabs
// allowed, no other invisible character.
var reasonRule = domain.TextRule{Field: "reason", Min: 1, Max: 500, Lines: true}

// checkSuspend checks a suspension request made at now by admin, and
// returns its reason as stored (NFC), or the fields at fault.
func checkSuspend(in SuspendInput, now time.Time, admin, userID string) (string, error) {
	reason, fe := reasonRule.Check(in.Reason)
	fes := []*domain.FieldError{fe}
	switch {
	case in.Until != nil && !in.Until.UTC().Truncate(time.Millisecond).After(now):
		// As stored (milliseconds, what the database keeps): an until
		// less than a millisecond ahead would be kept as now, a
		// suspension over as it begins that still ends every session.
		fes = append(fes, &domain.FieldError{Field: "until", Code: "not_future", Message: "must be in the future"})
	case in.Until != nil && !in.Until.Before(latestUntil):
		// Answers write times in RFC 3339, whose years end at 9999, and
		// an end is told later than until: a username's hold moves on to
		// until plus a revert link's TTL (at most 20 years), so an until
		// late in 9999 was told as a hold ending in year 10000
		// (TestASuspensionsEndLeavesRoomForTheHoldItMovesOn).
		fes = append(fes, &domain.FieldError{Field: "until", Code: "range",
			Message: "must be before " + latestUntil.Format(time.RFC3339) + " (leave it out for a suspension until lifted)"})
	}
	if userID == admin {
		fes = append(fes, &domain.FieldError{Field: "userId", Code: "self", Message: "an admin cannot suspend themselves"})
	}
	return reason, domain.InvalidFields(fes...)
}

// untilNotAfter refuses an until no later than at, the start the
// suspension would take.
func untilNotAfter(at time.Time) error {
	return domain.InvalidFields(&domain.FieldError{Field: "until", Code: "not_future",
		Message: "must be after the suspension's start, " + at.UTC().Format("2006-01-02T15:04:05.000Z07:00") +
			" (a millisecond after the account's last lift)"})
}

// changeAccount is the read -> decide -> compare-and-set loop of one
// visible account: decide gets the account as read at SERIAL and returns it
// changed, or the error to answer with. The change is written at the next
// version; a lost compare-and-set decides again on the newer state. With
// a (an admin's request, its first entry written), every round has an
// entry of its own: a lost round ends its entry, the next writes another
// before its compare-and-set, since a round may follow the sweeper's fence
// and end of the earlier entry (a request slow past the grace), and its
// compare-and-set then lands with nothing for the sweeper to find
// (TestAModerationRoundAfterTheSweepersFenceHasItsOwnEntry).
func (m *Service) changeAccount(ctx context.Context, userID string, a *Attempt, decide func(u domain.User) (domain.User, error)) (domain.User, error) {
	var out domain.User
	err := domain.Retry(ctx, maxAttempts, domain.ErrBusy, func(round int) (bool, error) {
		if a != nil && round > 0 {
			next, err := m.begin(ctx, userID, a.Action)
			if err != nil {
				return false, err
			}
			*a = next
			// The last round lost to another change: the account's own
			// changes give way to this one for a moment (domain.HoldFor), so
			// that its user cannot keep it from landing by changing his
			// account over and over. The hold only speeds this up: a
			// round whose hold failed runs as before, under the version.
			_, _ = m.users.Hold(ctx, userID, a.Tag, domain.HoldFor)
		}
		u, err := m.users.GetSerial(ctx, userID)
		if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
			return false, domain.ErrUserNotFound
		}
		if err != nil {
			return false, err
		}
		next, err := decide(u)
		if err != nil {
			return false, err
		}
		next.Version = u.Version + 1
		applied, err := m.users.Update(ctx, next)
		out = next
		if err == nil && !applied && a != nil {
			// Lost: this round's compare-and-set can never apply.
			if err := m.cfg.Attempts.End(ctx, *a); err != nil {
				return false, err
			}
		}
		return applied, err
	})
	return out, err
}

// finishSuspension writes a suspension's records (idempotent; the
// sessions ended in the suspension's compare-and-set, a new password
// epoch). The records are a grant (a row in the suspended
// list) made on the account as read before: it is checked again at the
// end. The account, read again at SERIAL, may have moved on meanwhile
// (deleted, or lifted by another admin): then the records just written
// are erased at the version read (forget), which shadows every write of
// them, this one's included wherever it lands. An account no longer visible
// answers ErrUserNotFound: the suspension took effect (its history entry
// stays), but the account it would describe is gone.
func (m *Service) finishSuspension(ctx context.Context, s domain.Suspension, version int) error {
	if err := m.suspensions.Record(ctx, s, version); err != nil {
		return err
	}
	if err := m.hook("suspend", "records"); err != nil {
		return err
	}
	u, err := m.users.GetSerial(ctx, s.UserID)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return domain.ErrUserNotFound
	case err != nil:
		return err
	case !backs(u.Standing(), s):
		if err := m.forget(ctx, u, s); err != nil {
			return err
		}
		if !u.Visible() {
			return domain.ErrUserNotFound
		}
		return nil
	}
	return nil
}

// liftIfEnded lifts s, whose records were just written, if it has ended
// by now (as the sweeper would: an expiry, by nobody). Its expiry entry,
// written that late, may sit behind where the sweeper's reader starts
// (a little behind now) and never be read; a finisher that writes the
// records of a suspension that already ended (a retry, the sweeper's
// pass over interrupted attempts, the repair) lifts it itself. A
// suspension lifted already, suspended again or gone is left alone.
func (m *Service) liftIfEnded(ctx context.Context, s domain.Suspension) error {
	_, err := m.liftEnded(ctx, s)
	return err
}

// liftEnded is liftIfEnded, and reports whether s had ended (by this
// process's clock and the node's): lifted now, or before by another.
func (m *Service) liftEnded(ctx context.Context, s domain.Suspension) (bool, error) {
	if s.Until.IsZero() {
		return false, nil
	}
	// Ended by the node's clock, the one the sweepers' reader moves its
	// start by: a process whose clock runs ahead lifts nothing early, and
	// one not ended by it has its expiry entry ahead of where the reader
	// starts, so the sweeper lifts it. Not by this process's clock as
	// well: one running behind would leave an entry the reader's start
	// has passed to no one (TestAnAdminBehindLeavesNoSuspensionUnlifted).
	// Cost: one read of the node's clock per suspension with an end.
	node, err := m.suspensions.NodeNow(ctx)
	if err != nil {
		return false, err
	}
	now := node.UTC()
	if s.ActiveAt(now) {
		return false, nil
	}
	if err := m.lift(ctx, s.UserID, "", domain.Origin{}, &now, nil, nil); err != nil && !errors.Is(err, domain.ErrNotFound) {
		return false, err
	}
	return true, nil
}

// forget erases the records of s, a suspension that u, the account read
// at SERIAL, does not have (fence before you forget: that read is the
// proof). Every write of s's records was made at a version at which the
// account had s, so older than u's: the deletes at u's version shadow
// them all, those still on their way included. An account being deleted
// or deleted gets s's history entry first: a deletion ends a suspension
// with no lift whose entries would carry it (S5), and the record is the
// proof that s took effect. An account suspended again keeps its lookup,
// which is the current suspension's, and its expiry entry when the current
// suspension ends when s did (the entry's key is the end and the user).
func (m *Service) forget(ctx context.Context, u domain.User, s domain.Suspension) error {
	if u.Status == domain.StatusDeleting || u.Status == domain.StatusDeleted {
		if err := m.suspensions.RecordSuspended(ctx, s, u.Version); err != nil {
			return err
		}
	}
	if u.Status == domain.StatusSuspended && u.Suspension != nil {
		if u.Suspension.Until.Equal(s.Until) {
			s.Until = time.Time{}
		}
		return m.suspensions.EraseListing(ctx, s, u.Version)
	}
	return m.suspensions.Erase(ctx, s, u.Version)
}

// Unsuspend lifts a suspension (admins only): the account first, by
// compare-and-set, recording the lift in it, then the lift's history
// entries, then the list's records are erased. Unsuspending an account
// that is not suspended answers not_suspended, after finishing what an
// interrupted Unsuspend left: the last lift's history entries, then the
// records. An unsuspension interrupted after its compare-and-set is
// finished by its retry or by the sweeper's FinishInterrupted.
func (m *Service) Unsuspend(ctx context.Context, p domain.Principal, userID string) (err error) {
	admin, err := m.admins.RequireAdmin(ctx, p)
	if err != nil {
		return err
	}
	if !domain.ValidID(userID, domain.UserIDPrefix) {
		return domain.ErrUserNotFound
	}
	a, err := m.begin(ctx, userID, ActionUnsuspend)
	if err != nil {
		return err
	}
	// unwritten: as Suspend's, the lift's entry not written keeps the
	// attempt for the sweeper.
	var unwritten error
	defer func() {
		if unwritten == nil {
			m.end(ctx, a, err)
		}
	}()
	return m.lift(ctx, userID, admin.ID, p.From, nil, &a, &unwritten)
}

// lift ends the suspension of userID, by the admin by, whose request came
// from. With onlyIfExpiredAt set, it does so only if the suspension has
// ended by then (the sweeper's case: an expiry, by nobody, which the
// audit of admin actions does not record: the moderation history does).
// An admin's lift of a suspension whose until has passed is that expiry
// too, answered not_suspended once its records are erased.
// a is the admin's attempt (nil for a lift by nobody); unwritten, when
// set, gets the failure of the write of the lift's audit entry, which the
// attempt's entry then outlives.
func (m *Service) lift(ctx context.Context, userID, by string, from domain.Origin, onlyIfExpiredAt *time.Time, a *Attempt, unwritten *error) error {
	var lift domain.Lift
	var audited []domain.AuditEntry
	fenced := false
	next, err := m.changeAccount(ctx, userID, a, func(u domain.User) (domain.User, error) {
		audited, fenced = nil, false
		if by != "" {
			// An admin's retry of an unsuspension that applied finds it
			// lifted: its entry is finished from the row.
			if err := domain.CarryAdminChange(ctx, m.audit, &u, nil); err != nil {
				return u, err
			}
		}
		if u.Status != domain.StatusSuspended || u.Suspension == nil {
			if l := u.LastLift; l != nil {
				if err := m.suspensions.RecordLift(ctx, *l, u.Version); err != nil {
					return u, err
				}
			}
			if err := m.eraseLeftovers(ctx, u); err != nil {
				return u, err
			}
			if a != nil {
				// An admin's not_suspended is given once this round's
				// fence (the row as read, at the next version) applied:
				// a suspension decided on the row read, whose
				// compare-and-set is held at a node, can no longer land
				// after the answer
				// (TestAnAnswerThatTheUserIsNotSuspendedOutlivesALateSuspension).
				// Every round fences what it read, not the first alone:
				// a round after a lost compare-and-set reads the row the
				// write it lost to left, on which a suspension may have
				// been decided too
				// (TestAnAnswerAfterALostFenceOutlivesALateChangeDecidedSince).
				fenced = true
				return u, nil
			}
			return u, errNotSuspended
		}
		if onlyIfExpiredAt != nil && u.Suspension.ActiveAt(*onlyIfExpiredAt) {
			return u, errNotSuspended
		}
		now := m.now()
		lift = domain.Lift{Kind: domain.LiftUnsuspended, At: after(now, u.Suspension.SuspendedAt), By: by, Suspension: *u.Suspension}
		expired := onlyIfExpiredAt != nil
		if !expired && !u.Suspension.ActiveAt(now) {
			// Ended by this process's clock and the node's both, as a
			// login counts it (S3): a process ahead lifts a suspension
			// still in force as the admin's own
			// (TestAnAdminAheadLiftsAnUnendedSuspensionAsHisOwn).
			node, err := m.suspensions.NodeNow(ctx)
			if err != nil {
				return u, err
			}
			expired = !u.Suspension.ActiveAt(node.UTC())
		}
		if expired {
			// The sweeper's lift, or an admin's of a suspension that
			// ended by itself before the sweeper came: an expiry.
			lift.Kind, lift.At, lift.By = domain.LiftExpired, after(u.Suspension.Until, u.Suspension.SuspendedAt), ""
		}
		u.Status, u.Suspension, u.LastLift, u.UpdatedAt = domain.StatusActive, nil, &lift, now
		if lift.By != "" {
			audited = []domain.AuditEntry{{UserID: u.ID, At: lift.At, Version: u.Version + 1, Action: domain.AuditUnsuspended,
				Actor: lift.By, Via: domain.ViaAPI, From: from, Reason: lift.Suspension.Reason, Until: lift.Suspension.Until}}
			u.AdminChange = audited // the row's were written above
		}
		return u, nil
	})
	if err == nil && fenced {
		err = errNotSuspended
	}
	if err != nil {
		return err
	}
	if err := m.hook("unsuspend", "cas"); err != nil {
		return err
	}
	if err := m.recordApplied(ctx, audited); err != nil && unwritten != nil {
		*unwritten = err
	}
	if err := m.suspensions.RecordLift(ctx, lift, next.Version); err != nil {
		return err
	}
	if err := m.hook("unsuspend", "history"); err != nil {
		return err
	}
	if err := m.suspensions.Erase(ctx, lift.Suspension, next.Version); err != nil {
		return err
	}
	if err := m.hook("unsuspend", "records"); err != nil {
		return err
	}
	if by != "" && lift.Kind == domain.LiftExpired {
		return endedBefore(lift.Suspension.Until)
	}
	return nil
}

// endedBefore answers an admin's unsuspend of a suspension that had ended
// by itself at until: lifted as its expiry, the admin lifted nothing.
func endedBefore(until time.Time) error {
	return &domain.Error{Kind: domain.ErrNotFound, Code: "not_suspended",
		Message: "The user is not suspended: the suspension ended by itself at " + until.UTC().Format(time.RFC3339) + "."}
}

// eraseLastLifted erases the records of u's last lifted suspension by
// their keys, at u's version: list row, lookup (keyed by the user alone,
// so a write of it still on its way, of any older suspension, is shadowed
// whether or not a read found it), expiry entry last. The account row
// keeps no bucket for it: the bucket is worked out from its start, as
// Suspend did (the bucket size is set once per keyspace). Callers read
// the lookup first, for what it names of an older suspension's
// leftovers.
func (m *Service) eraseLastLifted(ctx context.Context, u domain.User) error {
	l := u.LastLift
	if l == nil {
		return nil
	}
	s := l.Suspension
	if s.Bucket == "" {
		s.Bucket = BucketOf(s.SuspendedAt, m.cfg.BucketSize)
	}
	return m.suspensions.Erase(ctx, s, u.Version)
}

// after is t, or the millisecond after prev if t is not later: the events
// of one account get strictly increasing times, whatever the clocks of
// the instances that made them, so no two share a history entry's key.
func after(t, prev time.Time) time.Time {
	if t.After(prev) {
		return t
	}
	return prev.Add(time.Millisecond)
}

// eraseLeftovers removes the records of a suspension the account no longer
// has (an Unsuspend that stopped after its compare-and-set): what the
// reverse lookup names, then the last lift's suspension's by their own
// keys, whatever the lookup said (its write may have failed while the
// list row landed, so it never named them; or it is still on its way,
// and its delete by key shadows it: TestALateLookupOfALiftedSuspensionIsShadowed).
// The last lift's expiry entry goes last: a lift by the sweeper has no
// attempt entry, and its expiry entry is what leads the next sweep back
// to what a stop here leaves (TestASweepersLiftStoppedTwiceLeavesNoLookup).
func (m *Service) eraseLeftovers(ctx context.Context, u domain.User) error {
	s, err := m.suspensions.Lookup(ctx, u.ID)
	switch {
	case errors.Is(err, domain.ErrNotFound):
	case err != nil:
		return err
	default:
		if err := m.suspensions.Erase(ctx, s, u.Version); err != nil {
			return err
		}
	}
	return m.eraseLastLifted(ctx, u)
}
