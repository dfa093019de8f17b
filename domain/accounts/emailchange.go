package accounts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"shelf/domain"
)

// An email change an attacker cannot use
// (docs/design/email-change.md). A new address is only asked for: the
// account keeps its address (login, resets, every mail) until a link
// mailed to the new one is followed, and the new key is claimed for the
// account meanwhile (U1: nobody else takes it, and the change completes
// without a claim to win). The old address gets a notice with a revert
// link: it cancels a change still pending or, once completed, gives the
// old address back (still claimed for the account until the link ends,
// verified or not), ends every session of the account, and makes the
// password open nothing until a reset (a recovery). The owner's request
// ends the owner's other sessions, as a password change does.

// DefaultRevertTTL is how long a revert link works when Mail.RevertTTL is
// not set: a week, for an owner who reads mail rarely.
const DefaultRevertTTL = 7 * 24 * time.Hour

// revertTTL is how long a revert link works.
func (a *Service) revertTTL() time.Duration {
	if a.mail.RevertTTL > 0 {
		return a.mail.RevertTTL
	}
	return DefaultRevertTTL
}

// holds says which keys an account holds at a moment (holdsAt): its
// username and email for good, the new email it asked for until that
// change expires with its verification link, the address a completed
// change replaced until its revert link ends, and the username its
// owner's rename left for as long (docs/design/renames.md). A hold ends by the clock,
// but a key is never taken from an account on the clock alone: the
// claimer takes over a key an account names in an expired hold only
// after fencing the account's row (holders.Holder),
// docs/design/email-change.md.
type holds struct {
	now time.Time
	// pendingFor is how long a change pending lives: its verification
	// link's TTL and the grace in which a use begun before may finish.
	pendingFor time.Duration
	// nameFor is how long a username the owner's rename left is held for
	// the account: as long as an email change's revert link works.
	nameFor time.Duration
}

// holdsAt is the holds of this service at now.
func (a *Service) holdsAt(now time.Time) holds {
	return holds{now: now, pendingFor: a.mail.VerifyTTL + TokenGrace, nameFor: a.revertTTL()}
}

// heldName reports whether u still holds the username its owner's rename
// left: until HeldUsernameUntil, and while a suspension stands and for
// nameFor after it ended (by its own end, or lifted since the hold
// began): its owner cannot sign in to take the name back meanwhile, and a
// thief who renamed the account must not run the hold out by getting it
// suspended (TestASuspensionDoesNotRunANamesHoldOut). A hold that ended
// by this rule does not come back with a suspension: the suspension's
// write drops it (DropEndedHolds;
// TestASuspensionAfterAHoldEndedDoesNotBringTheNameBack), and a claimer
// fences the row (dropping it) before taking the name.
func (h holds) heldName(u domain.User) bool {
	if u.HeldUsernameKey == "" {
		return false
	}
	end, open := h.nameEnd(u)
	return open || h.now.Before(end)
}

// nameEnd is when the hold of the username u's owner left ends by
// heldName's rule (what an answer and a notice tell as its end, not
// HeldUsernameUntil alone: TestANameHeldPastASuspensionIsToldWithItsEnd),
// or open while a suspension without an end stands.
func (h holds) nameEnd(u domain.User) (end time.Time, open bool) {
	end = u.HeldUsernameUntil
	if s := u.Suspension; s != nil {
		if s.Until.IsZero() {
			return time.Time{}, true
		}
		end = latest(end, s.Until.Add(h.nameFor))
	}
	if l := u.LastLift; l != nil && l.At.After(u.HeldUsernameUntil.Add(-h.nameFor)) {
		end = latest(end, l.At.Add(h.nameFor))
	}
	return end, false
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// pending reports whether u's change pending still holds its new address.
func (h holds) pending(u domain.User) bool {
	return u.PendingEmailKey != "" && h.pendingSince(u.PendingEmailAt)
}

// pendingSince reports whether a change asked for at still holds its new
// address.
func (h holds) pendingSince(at time.Time) bool { return h.now.Before(at.Add(h.pendingFor)) }

// recovery reports whether u still holds its recovery address: until its
// revert link ends, and the grace in which a use of it begun before may
// still finish.
func (h holds) recovery(u domain.User) bool {
	return u.RecoveryEmailKey != "" && h.now.Before(u.RecoveryUntil.Add(TokenGrace))
}

// recoveryLink reports whether u's recovery address is held and its
// revert link still works: until RecoveryUntil, without the grace that
// recovery adds for a use begun before. A new use of an expired link is
// refused, so an older hold in its grace gives its reader no way back.
func (h holds) recoveryLink(u domain.User) bool {
	return u.RecoveryEmailKey != "" && h.now.Before(u.RecoveryUntil)
}

// key reports whether u holds key of kind: its username, its email, the
// new email it asked for, the replaced email its revert link may still
// give back, or the username its owner's rename left. The claimer keeps
// every one of them for u.
func (h holds) key(u domain.User, kind domain.ClaimKind, key string) bool {
	switch {
	case u.KeyOf(kind) == key:
		return true
	case key == "":
		return false
	case kind == domain.KindUsername:
		return u.HeldUsernameKey == key && h.heldName(u)
	case u.PendingEmailKey == key && h.pending(u):
		return true
	}
	return u.RecoveryEmailKey == key && h.recovery(u)
}

// keys lists the keys u holds.
func (h holds) keys(u domain.User) []domain.Key {
	var keys []domain.Key
	for _, k := range []string{u.UsernameKey, u.HeldUsernameKey} {
		if k != "" && h.key(u, domain.KindUsername, k) {
			keys = append(keys, domain.Key{Kind: domain.KindUsername, Key: k, Field: "username"})
		}
	}
	for _, k := range []string{u.EmailKey, u.PendingEmailKey, u.RecoveryEmailKey} {
		if k != "" && h.key(u, domain.KindEmail, k) {
			keys = append(keys, domain.Key{Kind: domain.KindEmail, Key: k, Field: "email"})
		}
	}
	return keys
}

// names reports whether u's row names key of kind: its own, or in a
// hold, whether or not that hold has ended.
func names(u domain.User, kind domain.ClaimKind, key string) bool {
	switch {
	case key == "":
		return false
	case u.KeyOf(kind) == key:
		return true
	case kind == domain.KindUsername:
		return u.HeldUsernameKey == key
	}
	return u.PendingEmailKey == key || u.RecoveryEmailKey == key
}

// live is u with every hold that has ended dropped: a change pending
// past its link's life reads as no change pending, a recovery address
// past its link's as none, a username left past its hold as none, unless the change pending asks for it back:
// the row names it for as long as that change lasts, so that its
// confirmation, whenever it comes, is a change back that holds nothing
// in turn (completeEmailChange), whatever was written meanwhile
// (TestAChangeBackConfirmedPastItsHoldLeavesTheThiefNoRevert). Its revert
// link has ended all the same (recovery). changed says whether anything
// was dropped.
func (h holds) live(u domain.User) (out domain.User, changed bool) {
	if u.PendingEmailKey != "" && !h.pending(u) {
		u.PendingEmail, u.PendingEmailKey, u.PendingEmailAt, u.PendingEmailSession = "", "", time.Time{}, ""
		changed = true
	}
	if u.RecoveryEmailKey != "" && !h.recovery(u) && u.RecoveryEmailKey != u.PendingEmailKey {
		u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "", "", time.Time{}
		changed = true
	}
	if u.HeldUsernameKey != "" && !h.heldName(u) {
		u.HeldUsername, u.HeldUsernameKey, u.HeldUsernameUntil = "", "", time.Time{}
		changed = true
	}
	return u, changed
}

// releaseDropped gives back the keys before held and after, written in
// its place, no longer names. A key after names in a hold that has ended
// by this clock stays claimed: a write that read after while the hold
// lasted (a revert, a change back) may still make it the account's, and
// only a claimer that fenced the row takes it over (holders.Holder).
// A claim that is not given back (a failure, a lost answer) is an orphan
// anyone may take over once the account's version is past its base
// (docs/design/renames.md): releasing only tidies.
func (a *Service) releaseDropped(ctx context.Context, before, after domain.User) {
	a.releaseUnnamed(ctx, a.holdsAt(a.cfg.Now()).keys(before), before.ID, after)
}

// releaseLeft is releaseDropped for a write that also dropped the holds
// that had ended (holds.live): it gives back every key before names,
// held still or not, that after no longer names. after's compare-and-set
// moved the version past every write that read those holds (a change
// back, a revert, a confirmation), so none of them can make the key the
// account's again; left claimed, the key named the account until a
// claimer came, and for good once it was deleted, its entry and its row
// naming neither (TestAHoldEndedAndDroppedLeavesNoClaimBehindADeletion).
func (a *Service) releaseLeft(ctx context.Context, before, after domain.User) {
	a.releaseUnnamed(ctx, named(before), before.ID, after)
}

// DropEndedHolds is u with every hold that has ended by now dropped
// (holds.live), and whether any was: for a write of the account made
// elsewhere (a suspension), which gives back what it dropped once it
// applied (ReleaseLeft).
func (a *Service) DropEndedHolds(u domain.User) (domain.User, bool) {
	return a.holdsAt(a.now()).live(u)
}

// ReleaseLeft is releaseLeft for a write of the account made elsewhere
// (a suspension that dropped the holds that had ended).
func (a *Service) ReleaseLeft(ctx context.Context, before, after domain.User) {
	a.releaseLeft(ctx, before, after)
}

// releaseUnnamed gives back those of keys, of account id, that after no
// longer names (Claimer.ReleaseOld at after's version).
func (a *Service) releaseUnnamed(ctx context.Context, keys []domain.Key, id string, after domain.User) {
	var dropped []domain.Key
	for _, k := range keys {
		if !names(after, k.Kind, k.Key) {
			dropped = append(dropped, k)
		}
	}
	if len(dropped) == 0 {
		return
	}
	_ = a.claimer.ReleaseOld(ctx, dropped, id, after.Version) // only tidies: see releaseDropped
}

// named lists every key u's row names (names), its hold ended or not.
func named(u domain.User) []domain.Key {
	var keys []domain.Key
	for _, k := range []string{u.UsernameKey, u.HeldUsernameKey} {
		if k != "" && !slices.ContainsFunc(keys, func(h domain.Key) bool { return h.Key == k }) {
			keys = append(keys, domain.Key{Kind: domain.KindUsername, Key: k, Field: "username"})
		}
	}
	var emails []domain.Key
	for _, k := range []string{u.EmailKey, u.PendingEmailKey, u.RecoveryEmailKey} {
		if k != "" && !slices.ContainsFunc(emails, func(h domain.Key) bool { return h.Key == k }) {
			emails = append(emails, domain.Key{Kind: domain.KindEmail, Key: k, Field: "email"})
		}
	}
	return append(keys, emails...)
}

// cancelPending drops u's change of address pending: what every recovery
// (a reset, the revert of an email change or of a factor) does in its
// compare-and-set, since whoever asked for it knew the password the
// recovery takes back, and its verification link went to their mailbox.
// The key it held is released after (releaseDropped).
func cancelPending(u *domain.User) {
	u.PendingEmail, u.PendingEmailKey, u.PendingEmailAt, u.PendingEmailSession = "", "", time.Time{}, ""
}

// pendingView is u as a mail to its pending address sees it: that
// address, not verified.
func pendingView(u domain.User) domain.User {
	u.Email, u.EmailKey, u.EmailVerifiedAt = u.PendingEmail, u.PendingEmailKey, time.Time{}
	return u
}

// mailPendingEmail mails, after the answer, a verification link to u's
// pending address. A failure is logged: the change stays pending and the
// owner asks again (POST /v1/email-verifications with the new address).
func (a *Service) mailPendingEmail(ctx context.Context, u domain.User) {
	if !a.mailOn() {
		return
	}
	a.afterAnswer(ctx, "mailing a verification link for an email change", func(ctx context.Context) error {
		return a.mailChangeLinks(ctx, u, anyones)
	})
}

// mailChangeLinks mails u's pending address, in one mail counted once
// in budget (a verification's, held back over the address's hourly
// limit), the change's verification link and its "not me" link
// (RefuseEmailChange): whoever reads the address may take it or refuse
// it, and a refusal keeps the account from asking for it again.
func (a *Service) mailChangeLinks(ctx context.Context, u domain.User, budget mailBudget) error {
	to := pendingView(u)
	if err := a.countMailOf(ctx, to.EmailKey, PurposeVerifyEmail, budget); err != nil {
		return fmt.Errorf("an email change's links for %s: %w", u.ID, err)
	}
	ctx, cancel := slotHeld(ctx)
	defer cancel()
	verify, err := a.issueCounted(ctx, to, PurposeVerifyEmail, "")
	if err != nil {
		return fmt.Errorf("storing an email change's verification token for %s: %w", u.ID, err)
	}
	refuse, err := a.issueCounted(ctx, to, PurposeRefuseEmail, "")
	if err != nil {
		return fmt.Errorf("storing an email change's not-me token for %s: %w", u.ID, err)
	}
	if err := a.mail.Mailer.Send(ctx, a.changeLinks(to, verify, refuse)); err != nil {
		return fmt.Errorf("mailing an email change's links to %s: %w", u.ID, err)
	}
	return nil
}

// changeLinks is the mail to the address a change asks for (u as
// pendingView shows it): its verification link and its "not me" link.
// It holds no text anyone chose but the address itself: it is not
// verified.
func (a *Service) changeLinks(u domain.User, verify, refuse string) Message {
	return Message{To: u.Email, Subject: "Confirm your email address for shelf", Text: fmt.Sprintf(
		"Hello,\n\nsomeone signed in to a shelf account asked to make %s its email address.\n\n"+
			"If it was you, confirm the address here (the link works once, for %s):\n\n%s\n\n"+
			"If it was not you, this is not your account, or you do not want it to have this address, "+
			"follow this link instead (it works once, until the request expires):\n\n%s\n\n"+
			"It cancels the request, frees this address at once, and the account may never ask for it again. "+
			"Neither link signs you in or shows you anything of the account. "+
			"If the account may be yours and someone else asked, the link mailed to its current address undoes the change instead.\n",
		u.Email, inWords(a.mail.VerifyTTL), Link(a.mail.PublicURL, PurposeVerifyEmail, verify), Link(a.mail.PublicURL, PurposeRefuseEmail, refuse))}
}

// ErrAddressRefused refuses a change to an address whose reader followed
// the "not me" link of an earlier change of this account to it.
var ErrAddressRefused = &domain.Error{Kind: domain.ErrConflict, Code: "address_refused",
	Message: "This account may not ask for this email address: its reader said it is not theirs.",
	Fields: []domain.FieldError{{Field: "email", Code: "refused",
		Message: "was refused by its reader (the \"not me\" link of an earlier change to it); ask for another address"}}}

// refused reports whether the reader of the address key refused it for
// u ("not me"): u may not ask for it again.
func refused(u domain.User, key string) bool { return slices.Contains(u.RefusedEmailKeys, key) }

// RefuseEmailChange follows the "not me" link mailed beside a change's
// verification link to the address it asks for. In one compare-and-set
// on the account's version it ends the change if it still asks for that
// address (whichever attempt asked: the reader refuses the address, not
// one request) and records the address's key as refused, so no later
// change of the account asks for it (ErrAddressRefused). Then the key,
// no longer held, is given back (releaseDropped: anyone may sign up with
// it at once), and the token is done. It signs nobody in, ends no
// session and answers nothing of the account: its holder reads an
// address the account only asked for. An account may be barred only
// from addresses whose readers refused it: a thief who asked for his own
// address and refuses it from there bars the account from his address
// alone. A retry of a used token that is not done runs it again.
func (a *Service) RefuseEmailChange(ctx context.Context, token string) error {
	t, err := a.takeToken(ctx, token, PurposeRefuseEmail, refusalApplies)
	if err != nil {
		return err
	}
	return a.changeForToken(ctx, t, func(u domain.User) (domain.User, bool, error) {
		if err := refusalApplies(t, u, nil); err != nil {
			return u, false, err
		}
		write := false
		if u.PendingEmailKey == t.EmailKey {
			cancelPending(&u)
			write = true
		}
		if !refused(u, t.EmailKey) {
			u.RefusedEmailKeys = append(slices.Clone(u.RefusedEmailKeys), t.EmailKey)
			write = true
		}
		return u, write, nil
	})
}

// refusalApplies checks the account a "not me" token was mailed for (as
// read, with the read's error): visible, and the address not its own (a
// change its reader confirmed is not refused afterwards).
func refusalApplies(t Token, u domain.User, err error) error {
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return ErrTokenStale
	case err != nil:
		return err
	case !u.Visible() || u.EmailKey == t.EmailKey:
		return ErrTokenStale
	}
	return nil
}

// ErrNoticeFailed answers an email change whose notice to the account's
// address could not be sent: nothing changed.
var ErrNoticeFailed = &domain.Error{Kind: domain.ErrUnavailable, Code: "notice_failed",
	Message: "The notice to your current email address could not be sent, so nothing changed; try again."}

// ErrResetLinkFailed answers a revert whose reset link could not be
// mailed (the mail server refused or was down): the account is recovered,
// the token not done, and following the link again mails it (503, as a
// retry finishes). The mailer's own error would answer 500.
var ErrResetLinkFailed = &domain.Error{Kind: domain.ErrUnavailable, Code: "reset_link_failed",
	Message: "The reset link could not be mailed; follow the link again to send it."}

// mailRevertsLink mails a revert's reset link to u's address, never held
// back; a failure of the mailer is ErrResetLinkFailed.
func (a *Service) mailRevertsLink(ctx context.Context, u domain.User) error {
	err := a.sendToken(ctx, u, PurposeResetPassword, neverHeld, anyones)
	var known *domain.Error
	if err == nil || errors.As(err, &known) || errors.Is(err, domain.ErrUnavailable) {
		return err
	}
	a.log.Warn(ctx, "a revert's reset link failed; its retry mails it", "user", u.ID, "error", err.Error())
	return ErrResetLinkFailed
}

// recoveredSince reports whether u's recovery moved on since revert
// token t's use read it, and the last recovery went through the address
// the link was mailed to, which u has had since (a recovery moved its
// RecoveryEpoch past the AddressEpoch it came in with): a reset link
// mailed there, this revert's own run, another of its revert links. It
// is the owner's, and a run of t again must change nothing but what is
// left to finish: reverting again would undo her reset
// (TestARevertWhoseDoneMarkFailedChangesNothingAfterItsReset). While the
// account has another address (the thief's, the change this link
// reverts), a recovery since may be his reset, and the revert goes on
// (TestAThiefsResetBeforeTheRevertLandsIsUndoneByItsRetry); so it does
// when the address came back by a confirmation after that reset, which
// is no recovery and leaves him his password and sessions
// (TestARevertRunAgainAfterTheThiefsResetAndAChangeBackStillRecovers).
// A token used before migration 044 records none, and runs again as
// before.
func recoveredSince(t Token, u domain.User) bool {
	return t.UsedRecovery != "" && t.UsedRecovery != RecoveryPrint(u) && u.EmailKey == t.EmailKey &&
		u.RecoveryEpoch > u.AddressEpoch
}

// finishRevert marks a revert's token done once the reset link its run
// mailed, at out's recovery, is the one in force. The same link followed
// twice at once runs twice, and the run that moved the recovery on last
// mails the only link that works: an earlier run leaves the token to it,
// so that if its mail fails, the owner's retry of the link mails one at
// the recovery in force rather than answering used
// (TestARevertRunTwiceLeavesAWorkingResetLink). A recovery moved on by
// a reset since (the account no longer asks for one) is the owner's use
// of a link: the revert is over and the token done, or following it
// again would revert her reset
// (TestARevertLinkFollowedAgainAfterItsResetChangesNothing). Cost: one
// read at SERIAL.
func (a *Service) finishRevert(ctx context.Context, t Token, out domain.User) error {
	now, err := a.users.GetSerial(ctx, t.UserID)
	if err != nil {
		return err
	}
	if RecoveryPrint(now) != RecoveryPrint(out) && now.PasswordResetRequired {
		return nil
	}
	return a.finishToken(ctx, t)
}

// tooManyMails answers an email change whose notice was held back by the
// hourly mail limit of the account's address (an address not verified:
// docs/design/throttle.md): nothing changed; wait says when one more mail
// may go.
func tooManyMails(wait time.Duration) error {
	return &domain.Error{Kind: domain.ErrTooManyAttempts, Code: "too_many_mails", RetryAfter: max(wait, time.Second),
		Message: "Your current email address had as many mails as it may this hour, and an email change must notify it first, so nothing changed; try again later."}
}

// mailNotice mails u's address the notice of an email change with its
// revert link, before the change is written (the one mail of a change
// that its request waits for): no address changes without its owner being
// told. A notice whose change then fails tells of a change that did not
// happen; its link then recovers an account nothing took (the sessions
// end, a new password is asked for through a reset link to the address
// the account has), which does no harm. It is counted against the
// address's hourly limit in the budget of the account's own mails
// (owners: a stranger's resets do not spend it, so they hold back no
// change of the owner's); to a verified address it is never held back
// (a thief who spent the address's own mails must not silence the
// owner's alarm), to one that is not verified it is held back over the
// limit like any mail, and the change refused (too_many_mails): such an
// address may be a stranger's, typed at signup to aim notices at it.
func (a *Service) mailNotice(ctx context.Context, u domain.User) error {
	limit := heldBack
	if !u.EmailVerifiedAt.IsZero() {
		limit = neverHeld
	}
	err := a.sendToken(ctx, u, PurposeRevertEmail, limit, owners)
	var over *mailLimited
	if errors.As(err, &over) {
		return tooManyMails(over.wait)
	}
	if err != nil {
		a.log.Warn(ctx, "an email change's notice failed; nothing changed", "user", u.ID, "error", err.Error())
		return ErrNoticeFailed
	}
	return nil
}

// noticedBy reports whether u's change pending was asked by the session
// of principal p and has not expired at h: that session's notice with its
// revert link went to u's address, which the account still has (a change
// pending does not move it), and the link still works; a change replacing
// it needs no second notice (one notice per pending change and session,
// so one session cannot flood the address). A change an admin asked for
// names no session: the next change, by anyone, mails its own notice.
func noticedBy(u domain.User, p domain.Principal, h holds) bool {
	return u.PendingEmailSession != "" && p.Session.TokenHash != "" &&
		u.PendingEmailSession == domain.SessionID(p.Session.TokenHash) && h.pending(u)
}

// completeEmailChange is the change of u once its pending address is
// verified at now: the pending address becomes the account's, verified;
// the address it replaces, verified or not, is held for its revert link
// (unless an older one is held still: the first address replaced is the
// one most likely the owner's). Not only a verified one: an owner who
// never verified the signup's address would otherwise have a dead revert
// link and the address would be free for a stranger's signup; the account
// trusts whoever holds its address, verified or not, as resets already do.
// The hold ends with the revert link mailed when the change was asked
// for (asked + revertTTL). An older hold is kept only while its link
// works (recoveryLink), not in its grace: kept then, it would leave the
// account no working revert link, the older one expired and the address
// replaced not held (TestAConfirmationPastTheOlderLinkLeavesAWorkingRevert).
// A change back to the address held is a revert by its reader, who
// confirmed it: the address it replaces is not held, or its reader (a
// thief who had moved the account there) could revert the revert
// (TestAChangeBackToTheHeldAddressLeavesTheThiefNoRevert).
func completeEmailChange(u domain.User, h holds, revertTTL time.Duration) domain.User {
	if u.RecoveryEmailKey == u.PendingEmailKey {
		// Back to the address held: it is the account's again.
		u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "", "", time.Time{}
	} else if !h.recoveryLink(u) {
		u.RecoveryEmail, u.RecoveryEmailKey = u.Email, u.EmailKey
		u.RecoveryUntil = u.PendingEmailAt.Add(revertTTL)
	}
	u.Email, u.EmailKey, u.EmailVerifiedAt = u.PendingEmail, u.PendingEmailKey, h.now
	u.AddressEpoch = u.RecoveryEpoch // no recovery went through it yet (recoveredSince)
	u.PendingEmail, u.PendingEmailKey, u.PendingEmailAt, u.PendingEmailSession = "", "", time.Time{}, ""
	return u
}

// ErrRevertStale refuses a revert link whose address the account neither
// has nor holds any more (its time to give it back ran out, or the
// account is gone).
var ErrRevertStale = tokenError("stale", "no longer applies: the account no longer has or holds the address it was mailed to")

// RevertEmailChange follows a revert link mailed to an account's old
// address: a recovery. The pending change is cancelled, or the completed
// one undone (the address the link was mailed to is the account's again,
// verified: following the link proves it); every session of the account
// ends, in the same compare-and-set (a new password epoch: Authenticate
// refuses every older session) and then by revocation; the password
// opens nothing until a reset (PasswordResetRequired, set in the same
// compare-and-set: whoever changed the email knew the password); and a
// reset link is mailed to the address, counted but never held back by
// its hourly limit. The order: use the token, compare-and-set the
// account, end the sessions, release the keys no longer held, mail the
// reset link, then mark the token done; a retry of a
// used token that is not done runs it again, and finishes.
func (a *Service) RevertEmailChange(ctx context.Context, token string) error {
	t, err := a.takeToken(ctx, token, PurposeRevertEmail, a.revertApplies)
	if err != nil {
		return err
	}
	var before domain.User
	over := false
	out, err := a.updateRecovery(ctx, t.UserID, func(u domain.User) (domain.User, bool, error) {
		before = u
		if err := a.revertApplies(t, u, nil); err != nil {
			return u, false, err
		}
		if over = recoveredSince(t, u); over {
			return u, false, nil
		}
		if u.EmailKey != t.EmailKey {
			// The address held is the account's again. A link of the
			// address the account has now only cancels what is pending,
			// and keeps an older address held: a thief who made the
			// account's address theirs must not end the owner's link.
			u.Email, u.EmailKey, u.EmailVerifiedAt = u.RecoveryEmail, u.RecoveryEmailKey, a.now()
			u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "", "", time.Time{}
		}
		if t.Email != "" && u.Email != t.Email {
			// The key is the link's; its spelling is the one the link was
			// mailed to and followed from. A row written before other
			// spellings were refused (respells) may keep a thief's, where
			// the reset link below would go
			// (TestARevertWritesBackTheAddressAsItsLinkWasMailed).
			u.Email = t.Email
		}
		cancelPending(&u)
		u.PasswordEpoch, u.PasswordSession, u.PasswordResetRequired = u.PasswordEpoch+1, "", true
		u.RecoveryEpoch++ // only the reset link mailed below works
		return u, true, nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return ErrRevertStale
	}
	if err == nil && over && !out.PasswordResetRequired {
		// Her reset since: the revert is over but for the factors a run
		// stopped before their removal left, which would answer her
		// password with the thief's challenge for good
		// (TestARevertRunAgainAfterItsResetRemovesTheThiefsFactors); not
		// those she added after her reset, and the account's last change
		// (TestARevertRunAgainAfterItsResetSparesHerNewFactor).
		if err := a.dropFactorsBetween(ctx, t.UserID, t.CreatedAt, out.UpdatedAt); err != nil {
			return err
		}
		return a.finishToken(ctx, t)
	}
	if err := a.endSessions(ctx, err, t.UserID, "a revert"); err != nil {
		return err
	}
	if err := a.dropFactorsSince(ctx, t.UserID, t.CreatedAt); err != nil {
		return err
	}
	if out.Version != before.Version || over {
		a.releaseDropped(ctx, before, out)
		// The reset link before the done mark: a retry finds a done
		// token used and mails nothing, and the password now opens
		// nothing, every older link stale (TestARevertFaultedAnywhereLeavesAWorkingResetLink).
		if err := a.mailRevertsLink(ctx, out); err != nil {
			return err
		}
		return a.finishRevert(ctx, t, out)
	}
	return a.finishToken(ctx, t)
}

// revertApplies checks the account a revert token was mailed for (as
// read, with the read's error): visible, and it has the address still, or
// holds it for this link.
func (a *Service) revertApplies(t Token, u domain.User, err error) error {
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return ErrRevertStale
	case err != nil:
		return err
	case !u.Visible():
		return ErrRevertStale
	case u.EmailKey == t.EmailKey:
		return nil
	case u.RecoveryEmailKey == t.EmailKey && a.holdsAt(a.cfg.Now()).recovery(u):
		return nil
	}
	return ErrRevertStale
}

// NoticeTime is how a notice writes a moment: in UTC, to the second (a
// moment cut to the minute would say "from then on" of a confirmation
// up to a minute before it; TestANoticesMomentIsNeverEarlierThanTheHoldsEnd).
const NoticeTime = "2 January 2006, 15:04:05 UTC"

// revertNotice is the mail that tells u's address of an email change and
// carries the revert link. It holds no text anyone chose (no name, not
// the new address): the address it goes to may not be verified. Its link
// works after the confirmation only if the confirmation holds this
// address (completeEmailChange): not while an older address replaced is
// held, and then the notice says it works until the confirmation
// (TestANoticeSaysHowLongItsLinkWorks).
func (a *Service) revertNotice(u domain.User, token string) Message {
	until := fmt.Sprintf("(it works once, for %s, also after the new address is confirmed)", inWords(a.revertTTL()))
	if a.holdsAt(a.cfg.Now()).recovery(u) && u.RecoveryEmailKey != u.EmailKey {
		// The older hold is kept by a confirmation while its link works:
		// one from then on holds this address (completeEmailChange), and
		// its link works after it, the older address's no more
		// (TestANoticeSaysItsLinkWorksAfterAConfirmationPastTheOlderHold),
		// unless it confirms the address held, a change back, in its grace
		// too (TestANoticeOfAChangeBackInTheGraceHourDoesNotPromiseItsLink).
		until = fmt.Sprintf("before the new address is confirmed (it works once, for %s; a confirmation before %s, "+
			"or of the address this one replaced, ends it, and the link mailed earlier to that replaced address "+
			"undoes the change instead)", inWords(a.revertTTL()), u.RecoveryUntil.UTC().Format(NoticeTime))
	}
	return Message{To: u.Email, Subject: "The email address of your shelf account is changing", Text: fmt.Sprintf(
		"Hello,\n\nsomeone signed in to the shelf account of this address asked to change its email address.\n"+
			"The account keeps this address until the new one is confirmed.\n\n"+
			"If it was you, there is nothing to do.\n\n"+
			"If it was not you, follow this link %s:\n\n%s\n\n"+
			"It cancels the change or gives this address back, signs out every session of the account, "+
			"and mails you a link to choose a new password: whoever asked knew your password, so it opens "+
			"nothing until a new one is chosen.\n",
		until, Link(a.mail.PublicURL, PurposeRevertEmail, token))}
}
