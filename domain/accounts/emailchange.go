package accounts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"shelf/domain"
)

// An email change an attacker cannot use
// (docs/design.md#email-change). A new address is only asked for: the
// account keeps its address (login, resets, every mail) until a link
// mailed to the new one is followed, and the new key is claimed for the
// account meanwhile (U1: nobody else takes it, and the change completes
// without a claim to win). The old address gets a notice with a revert
// link: it cancels a change still pending or, once completed, gives the
// old address back (still claimed for the account until the link ends),
// and ends every session of the account. The owner's request ends the
// owner's other sessions, as a password change does.

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

// recoveryHeld reports whether u still holds its recovery address at now:
// until its revert link ends, and the grace in which a use of it begun
// before may still finish.
func recoveryHeld(u domain.User, now time.Time) bool {
	return u.RecoveryEmailKey != "" && now.Before(u.RecoveryUntil.Add(TokenGrace))
}

// holdsKey reports whether u holds key of kind at now: its username, its
// email, the new email it asked for, or the replaced email its revert
// link may still give back. The claimer keeps every one of them for u.
func holdsKey(u domain.User, kind domain.ClaimKind, key string, now time.Time) bool {
	switch {
	case u.KeyOf(kind) == key:
		return true
	case kind != domain.KindEmail || key == "":
		return false
	case u.PendingEmailKey == key:
		return true
	}
	return u.RecoveryEmailKey == key && recoveryHeld(u, now)
}

// heldKeys lists the keys u holds at now.
func heldKeys(u domain.User, now time.Time) []domain.Key {
	var keys []domain.Key
	if u.UsernameKey != "" {
		keys = append(keys, domain.Key{Kind: domain.KindUsername, Key: u.UsernameKey, Field: "username"})
	}
	for _, k := range []string{u.EmailKey, u.PendingEmailKey, u.RecoveryEmailKey} {
		if k != "" && holdsKey(u, domain.KindEmail, k, now) {
			keys = append(keys, domain.Key{Kind: domain.KindEmail, Key: k, Field: "email"})
		}
	}
	return keys
}

// releaseDropped gives back the keys before held and after, written in
// its place, no longer holds. A claim that is not given back (a failure,
// a lost answer) is an orphan anyone may take over once the account's
// version is past its base (docs/design.md#renames): releasing only tidies.
func (a *Service) releaseDropped(ctx context.Context, before, after domain.User) {
	now := a.cfg.Now()
	var dropped []domain.Key
	for _, k := range heldKeys(before, now) {
		if !holdsKey(after, k.Kind, k.Key, now) {
			dropped = append(dropped, k)
		}
	}
	a.claimer.ReleaseOld(ctx, dropped, before.ID)
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
		return a.mailToken(ctx, pendingView(u), PurposeVerifyEmail)
	})
}

// ErrNoticeFailed answers an email change whose notice to the account's
// address could not be sent: nothing changed.
var ErrNoticeFailed = &domain.Error{Kind: domain.ErrUnavailable, Code: "notice_failed",
	Message: "The notice to your current email address could not be sent, so nothing changed; try again."}

// mailNotice mails u's address the notice of an email change with its
// revert link, before the change is written (the one mail a request
// waits for): no address changes without its owner being told. A notice
// whose change then fails tells of a change that did not happen; its link
// then only ends the sessions, which does no harm.
func (a *Service) mailNotice(ctx context.Context, u domain.User) error {
	if err := a.mailToken(ctx, u, PurposeRevertEmail); err != nil {
		a.log.Warn(ctx, "an email change's notice failed; nothing changed", "user", u.ID, "error", err.Error())
		return ErrNoticeFailed
	}
	return nil
}

// completeEmailChange is the change of u once its pending address is
// verified at now: the pending address becomes the account's, verified;
// the address it replaces, if verified, is held for its revert link
// (unless an older one is held still: the first verified address is the
// one most likely the owner's).
// The hold ends with the revert link mailed when the change was asked
// for (asked + revertTTL).
func completeEmailChange(u domain.User, now time.Time, revertTTL time.Duration) domain.User {
	if u.RecoveryEmailKey == u.PendingEmailKey {
		// Back to the address held: it is the account's again.
		u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "", "", time.Time{}
	}
	if !u.EmailVerifiedAt.IsZero() && !recoveryHeld(u, now) {
		u.RecoveryEmail, u.RecoveryEmailKey = u.Email, u.EmailKey
		u.RecoveryUntil = u.PendingEmailAt.Add(revertTTL)
	}
	u.Email, u.EmailKey, u.EmailVerifiedAt = u.PendingEmail, u.PendingEmailKey, now
	u.PendingEmail, u.PendingEmailKey, u.PendingEmailAt = "", "", time.Time{}
	return u
}

// ErrRevertStale refuses a revert link whose address the account neither
// has nor holds any more (its time to give it back ran out, or the
// account is gone).
var ErrRevertStale = tokenError("stale", "no longer applies: the account no longer has or holds the address it was mailed to")

// RevertEmailChange follows a revert link mailed to an account's old
// address: the pending change is cancelled, or the completed one undone
// (the address the link was mailed to is the account's again, verified:
// following the link proves it); every session of the account ends, in
// the same compare-and-set (a new password epoch: Authenticate refuses
// every older session) and then by revocation; and a reset link is mailed
// to the address, since whoever changed the email knew the password. The
// order is ConfirmEmail's: use the token, compare-and-set the account,
// end the sessions, mark the token done; a retry finishes.
func (a *Service) RevertEmailChange(ctx context.Context, token string) error {
	t, err := a.takeToken(ctx, token, PurposeRevertEmail, a.revertApplies)
	if err != nil {
		return err
	}
	var before domain.User
	out, err := a.updateAccount(ctx, t.UserID, func(u domain.User) (domain.User, bool, error) {
		before = u
		if err := a.revertApplies(t, u, nil); err != nil {
			return u, false, err
		}
		if u.EmailKey != t.EmailKey {
			// The address held is the account's again. A link of the
			// address the account has now only cancels what is pending,
			// and keeps an older address held: a thief who made the
			// account's address theirs must not end the owner's link.
			u.Email, u.EmailKey, u.EmailVerifiedAt = u.RecoveryEmail, u.RecoveryEmailKey, a.now()
			u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "", "", time.Time{}
		}
		u.PendingEmail, u.PendingEmailKey, u.PendingEmailAt = "", "", time.Time{}
		u.PasswordEpoch, u.PasswordSession = u.PasswordEpoch+1, ""
		return u, true, nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return ErrRevertStale
	}
	if err := a.endSessions(ctx, err, t.UserID, "", "a revert"); err != nil {
		return err
	}
	if out.Version != before.Version {
		a.releaseDropped(ctx, before, out)
	}
	if err := a.finishToken(ctx, t); err != nil {
		return err
	}
	if out.Version != before.Version {
		a.afterAnswer(ctx, "mailing a reset link after a revert", func(ctx context.Context) error {
			return a.mailToken(ctx, out, PurposeResetPassword)
		})
	}
	return nil
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
	case u.RecoveryEmailKey == t.EmailKey && recoveryHeld(u, a.cfg.Now()):
		return nil
	}
	return ErrRevertStale
}

// revertNotice is the mail that tells u's address of an email change and
// carries the revert link. It holds no text anyone chose (no name, not
// the new address): the address it goes to may not be verified.
func (a *Service) revertNotice(u domain.User, token string) Message {
	return Message{To: u.Email, Subject: "The email address of your shelf account is changing", Text: fmt.Sprintf(
		"Hello,\n\nsomeone signed in to the shelf account of this address asked to change its email address.\n"+
			"The account keeps this address until the new one is confirmed.\n\n"+
			"If it was you, there is nothing to do.\n\n"+
			"If it was not you, follow this link (it works once, for %s, also after the new address is confirmed):\n\n%s\n\n"+
			"It cancels the change or gives this address back, signs out every session of the account, "+
			"and mails you a link to choose a new password: whoever asked knew your password.\n",
		a.revertTTL(), Link(a.mail.PublicURL, PurposeRevertEmail, token))}
}
