package accounts

import (
	"context"
	"errors"

	"shelf/domain"
)

// Email verification and password reset (docs/design/tokens.md): a token
// mailed to the account's address, stored hashed, single use. Requests
// answer before any work is done (the work runs after the answer), so a
// request for an unknown address answers exactly as one for a known
// address, at the same time.

// checkedEmail normalizes the address of a request, or names the field.
func checkedEmail(email string) (key string, err error) {
	_, key, fe := domain.NormalizeEmail(email)
	if fe != nil {
		return "", domain.InvalidFields(fe)
	}
	return key, nil
}

// mailToAccount runs after the answer: it mails a token of purpose to the
// visible account holding the email key, if there is one and want says
// so, counted in the budget the request's caller spends (budgetOf; a
// caller with no session for a request anyone may make).
func (a *Service) mailToAccount(ctx context.Context, key string, purpose TokenPurpose, caller domain.Principal, want func(domain.User) bool) error {
	u, err := a.findByKey(ctx, domain.KindEmail, key)
	if errors.Is(err, domain.ErrNotFound) {
		return nil // nobody: nothing to send, and the answer was the same
	}
	if err != nil {
		return err
	}
	if !want(u) {
		return nil
	}
	return a.mailToken(ctx, u, purpose, budgetOf(u, caller))
}

// budgetOf is the budget of the address of u that a request of caller
// spends: the account's own when caller is a session of u (its own
// authenticated action), anyone's otherwise, another account's session
// included.
func budgetOf(u domain.User, caller domain.Principal) mailBudget {
	if !caller.Anonymous() && caller.UserID == u.ID {
		return owners
	}
	return anyones
}

// RequestVerification mails a new verification link to the account whose
// email this is, if there is one and its email is not verified yet. It
// answers the same whoever asks and whatever the address (no session:
// an account that may not log in before it verifies asks this way).
// Asked with a session of that account (caller), the mail spends the
// account's own budget of the address, which a stranger's requests do
// not, so nobody who asks for its mails every hour keeps the owner from
// verifying; asked without, or by another account, anyone's budget
// (budgetOf). Which it was is decided after the answer.
//
// The new address of a change pending is asked for the same way: its
// claim leads to the account that asks for it (never a login: findByKey
// follows only an account's own address).
func (a *Service) RequestVerification(ctx context.Context, caller domain.Principal, email string) error {
	key, err := checkedEmail(email)
	if err != nil {
		return err
	}
	if !a.mailOn() {
		return ErrMailOff
	}
	a.afterAnswer(ctx, "mailing a verification link", func(ctx context.Context) error {
		u, err := a.findPending(ctx, key)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			return a.mailToAccount(ctx, key, PurposeVerifyEmail, caller, func(u domain.User) bool { return u.EmailVerifiedAt.IsZero() })
		case err != nil:
			return err
		}
		return a.mailChangeLinks(ctx, u, budgetOf(u, caller))
	})
	return nil
}

// findPending follows a committed email claim to the visible account that
// asks for that address (ErrNotFound when it leads to none).
func (a *Service) findPending(ctx context.Context, key string) (domain.User, error) {
	u, err := a.claimOwner(ctx, domain.KindEmail, key)
	if err != nil {
		return domain.User{}, err
	}
	if !u.Visible() || u.PendingEmailKey != key || !a.holdsAt(a.cfg.Now()).pending(u) {
		return domain.User{}, domain.ErrNotFound
	}
	return u, nil
}

// claimOwner reads the account a committed claim names, as it stands
// (ErrNotFound when the key has no committed claim): whether the account
// still holds the key, and how, is the caller's to check.
func (a *Service) claimOwner(ctx context.Context, kind domain.ClaimKind, key string) (domain.User, error) {
	id, err := a.claimedBy(ctx, kind, key)
	if err != nil {
		return domain.User{}, err
	}
	return a.users.Get(ctx, id)
}

// claimedBy is the account a committed claim names (ErrNotFound when the
// key has no committed claim), for its caller to read what it needs.
func (a *Service) claimedBy(ctx context.Context, kind domain.ClaimKind, key string) (string, error) {
	c, err := a.claimer.Lookup(ctx, kind, key)
	if err != nil {
		return "", err
	}
	if c.State != domain.ClaimCommitted {
		return "", domain.ErrNotFound
	}
	return c.Owner, nil
}

// requestMail checks the address, answers, and after the answer mails a
// token of purpose to its account if want says so, in anyone's budget
// (a reset is anyone's to ask for, with a session or not).
func (a *Service) requestMail(ctx context.Context, email string, purpose TokenPurpose, want func(domain.User) bool) error {
	key, err := checkedEmail(email)
	if err != nil {
		return err
	}
	if !a.mailOn() {
		return ErrMailOff
	}
	a.afterAnswer(ctx, "mailing a "+string(purpose)+" link", func(ctx context.Context) error {
		return a.mailToAccount(ctx, key, purpose, domain.Principal{}, want)
	})
	return nil
}

// mailVerification mails u a verification link after the answer (a signup,
// a change of email). A failure is logged: the signup or change stands and
// the user can ask again.
func (a *Service) mailVerification(ctx context.Context, u domain.User) {
	if !a.mailOn() {
		return
	}
	a.afterAnswer(ctx, "mailing a verification link", func(ctx context.Context) error {
		return a.mailToken(ctx, u, PurposeVerifyEmail, anyones)
	})
}

// ConfirmEmail verifies the email a verification token was mailed to, if
// the account still has it or still asks for it: use the token, set the
// account verified by compare-and-set (for an address asked for, it
// becomes the account's: emailchange.go), mark the token done. The
// compare-and-set is on the account's version and checks the address
// again, so the late confirmation of a change replaced since does
// nothing. A retry after any failure finishes: a used token that is not
// done is carried out again (setting verified twice is setting it once);
// a done one is refused as used.
func (a *Service) ConfirmEmail(ctx context.Context, token string) error {
	t, err := a.takeToken(ctx, token, PurposeVerifyEmail, a.verificationApplies)
	if err != nil {
		return err
	}
	return a.changeForToken(ctx, t, func(u domain.User) (domain.User, bool, error) {
		if err := a.verificationApplies(t, u, nil); err != nil {
			return u, false, err
		}
		if u.PendingEmailKey == t.EmailKey {
			return completeEmailChange(u, a.holdsAt(a.now()), a.revertTTL()), true, nil
		}
		if !u.EmailVerifiedAt.IsZero() {
			return u, false, nil
		}
		u.EmailVerifiedAt = a.now()
		return u, true, nil
	})
}

// changeForToken makes the change decide says on t's account (the
// account gone: ErrTokenStale), then finishes a token that sets no
// password and ends no session (a verification, a "not me"): what the
// change dropped is given back (releaseDropped) once its compare-and-set
// moved the version on, then the token is done.
func (a *Service) changeForToken(ctx context.Context, t Token, decide func(u domain.User) (domain.User, bool, error)) error {
	var before domain.User
	out, err := a.updateAccount(ctx, t.UserID, func(u domain.User) (domain.User, bool, error) {
		before = u
		return decide(u)
	})
	if errors.Is(err, domain.ErrNotFound) {
		return ErrTokenStale
	}
	if err != nil {
		return err
	}
	if out.Version != before.Version {
		a.releaseDropped(ctx, before, out)
	}
	return a.finishToken(ctx, t)
}

// takeToken reads the token behind what a client sent, for purpose, and
// uses it if it is unused and applies to its account (as read at SERIAL,
// with the read's error): the first steps of a token that sets no
// password (a confirmation, a revert). The use records the recovery it
// read (UsedRecovery). A used token is returned as it is: its use may
// still need finishing.
func (a *Service) takeToken(ctx context.Context, token string, purpose TokenPurpose, applies func(Token, domain.User, error) error) (Token, error) {
	if !a.mailOn() {
		return Token{}, ErrMailOff
	}
	t, err := a.readToken(ctx, token, purpose)
	if err != nil || !t.UsedAt.IsZero() {
		return t, err
	}
	u, err := a.users.GetSerial(ctx, t.UserID)
	if err := applies(t, u, err); err != nil {
		return Token{}, err
	}
	t.UsedRecovery = RecoveryPrint(u)
	return a.useToken(ctx, t, "")
}

// verificationApplies is tokenStillApplies for a verification token,
// which also applies to the new address the account asks for while that
// change has not expired (a change pending past its link's life reads as
// none: its key may be another account's by now), and asks for it as
// the link was mailed, but for letter case: a change asked again for the
// key written with other letters (ß for ss) may name another mailbox,
// whose reader alone confirms it
// (TestAConfirmationOfOneSpellingDoesNotGiveTheAccountAnother).
func (a *Service) verificationApplies(t Token, u domain.User, err error) error {
	if err == nil && u.Visible() && u.PendingEmailKey != "" && u.PendingEmailKey == t.EmailKey {
		if !a.holdsAt(a.cfg.Now()).pending(u) || !sameLetters(u.PendingEmail, t.Email) {
			return ErrTokenStale
		}
		return nil
	}
	return tokenStillApplies(t, u, err)
}

// tokenStillApplies checks the account a token was mailed for (as read,
// with the read's error): visible, and still at the address it was mailed
// to.
func tokenStillApplies(t Token, u domain.User, err error) error {
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return ErrTokenStale
	case err != nil:
		return err
	case !u.Visible() || u.EmailKey != t.EmailKey:
		return ErrTokenStale
	}
	return nil
}

// RequestPasswordReset mails a reset link to the account whose email this
// is, if there is one (active or suspended). It answers the same whoever
// asks and whatever the address. Only an account's own address leads to
// it (findByKey), never one it asks for: a reset goes to the address the
// account had before any change still pending, which is verified or the
// only one it ever had (docs/design/email-change.md).
func (a *Service) RequestPasswordReset(ctx context.Context, email string) error {
	return a.requestMail(ctx, email, PurposeResetPassword, func(domain.User) bool { return true })
}

// errRecoveredPassword refuses, as the reset a revert asked for, the
// password the account had: whoever changed its email knew it.
var errRecoveredPassword = domain.Invalid("The new password is not valid.", domain.FieldError{Field: "newPassword", Code: "recovered_password",
	Message: "is the password a recovery of this account made unusable (whoever changed its email knew it); choose another"})

// notTheRecoveredPassword refuses newPassword while u's password must be
// reset (a revert marked it) if it is that very password: the reset
// would give the thief back the account. One argon2 verification, paid
// only on a marked account.
func (a *Service) notTheRecoveredPassword(ctx context.Context, u domain.User, newPassword string) error {
	if !u.PasswordResetRequired {
		return nil
	}
	same, _, err := a.hasher.Verify(ctx, newPassword, u.PasswordHash)
	switch {
	case err != nil:
		return err
	case same:
		return errRecoveredPassword
	}
	return nil
}

// ResetPassword sets a new password with a reset token, ends every
// session of the account, and opens one for client under the new password
// (for an account with a second factor, the challenge its code turns into
// one): a reset is a way in, whatever the login's throttle holds (the
// mailed token is the credential, and its holder could set the password
// anyway). The order, and why (docs/design/tokens.md):
//
//  1. use the token, recording the new password's hash in it, by a
//     lightweight transaction (unused and of its purpose): from then on
//     the token can set that password and no other;
//  2. set the password by compare-and-set on the account's version, only
//     while the account still has the password the token was mailed
//     against (PasswordPrint) or already has the new one, moving its
//     password epoch on: from then on no session opened with an older
//     password works (Authenticate), a login in flight included;
//  3. end every session of the account;
//  4. open the new session as a login does (openSession), or the
//     challenge of the account's second factor, unless the login would
//     refuse the account (resetSession: the password is set, and the
//     answer holds no session);
//  5. mark the token done: from then on it is refused as used.
//
// A retry after any failure finishes: a used token that is not done goes
// on from step 2 if the password sent is the one it recorded, and is
// refused as used otherwise; its step 3 ends a session an earlier attempt
// opened and never handed out. A password is set only after its token's
// use applied (never by a refused token), and only the one password the
// use recorded: a token never sets two.
func (a *Service) ResetPassword(ctx context.Context, token, newPassword string, client Client) (LoginResult, error) {
	if !a.mailOn() {
		return LoginResult{}, ErrMailOff
	}
	t, err := a.readToken(ctx, token, PurposeResetPassword)
	if err != nil {
		return LoginResult{}, err
	}
	hash := "" // the hash this request recorded in the token, if it did
	if t.UsedAt.IsZero() {
		u, err := a.users.GetSerial(ctx, t.UserID)
		if err := tokenStillApplies(t, u, err); err != nil {
			return LoginResult{}, err
		}
		if !mailedAgainst(t, u) {
			return LoginResult{}, ErrTokenStale
		}
		if fe := a.passwordRules("newPassword", newPassword, u.UsernameKey, u.EmailKey); fe != nil {
			return LoginResult{}, domain.Invalid("The new password is not valid.", *fe)
		}
		if err := a.notTheRecoveredPassword(ctx, u, newPassword); err != nil {
			return LoginResult{}, err
		}
		if err := a.breachedPassword(ctx, "newPassword", newPassword); err != nil {
			return LoginResult{}, err
		}
		if hash, err = a.hasher.Hash(ctx, newPassword); err != nil {
			return LoginResult{}, err
		}
		if t, err = a.useToken(ctx, t, hash); err != nil {
			return LoginResult{}, err
		}
	}
	if t.NewPassword != hash {
		// Used by an earlier request: only the password it recorded may
		// be set, so only its retry (the same password) goes on.
		ok, _, err := a.hasher.Verify(ctx, newPassword, t.NewPassword)
		if err != nil {
			return LoginResult{}, err
		}
		if !ok {
			return LoginResult{}, ErrTokenUsed
		}
	}
	var before domain.User
	out, err := a.updateRecovery(ctx, t.UserID, func(u domain.User) (domain.User, bool, error) {
		before = u
		if err := tokenStillApplies(t, u, nil); err != nil {
			return u, false, err
		}
		switch {
		case u.PasswordHash == t.NewPassword:
			return u, false, nil // set already: a retry, or a held attempt landed
		case !mailedAgainst(t, u):
			return u, false, ErrTokenStale // changed since the mail
		}
		// A new epoch: every session opened with an older password stops
		// working with this compare-and-set, whatever revocation misses;
		// and the reset a revert asked for is done.
		u.PasswordHash, u.PasswordEpoch, u.PasswordSession = t.NewPassword, u.PasswordEpoch+1, ""
		u.PasswordResetRequired = false
		// The link was mailed to the address the account still has
		// (tokenStillApplies): following it proves its reader, as a
		// verification link would. Else an owner who never verified is
		// refused a session under SHELF_REQUIRE_VERIFIED_EMAIL, and a
		// stranger who spends the address's hour on resets holds back
		// the verification she asks for without one.
		if u.EmailVerifiedAt.IsZero() {
			u.EmailVerifiedAt = a.now()
		}
		// A recovery: every other reset link goes stale, and a change of
		// address pending (a thief's, its link in their mailbox) ends.
		u.RecoveryEpoch++
		cancelPending(&u)
		return u, true, nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return LoginResult{}, ErrTokenStale
	}
	if err := a.endSessions(ctx, err, t.UserID, "a reset"); err != nil {
		return LoginResult{}, err
	}
	if out.Version != before.Version {
		a.releaseDropped(ctx, before, out)
	}
	opened, err := a.resetSession(ctx, out, client)
	if err != nil {
		return LoginResult{}, err
	}
	if err := a.finishToken(ctx, t); err != nil {
		return LoginResult{}, err
	}
	return opened, nil
}

// resetSession opens the session a reset answers with, on u as the
// reset's compare-and-set left it (its new epoch), or for an account with
// a confirmed factor the login's challenge (MadeReset). None (a zero
// result) for an account the login refuses (a suspension in force, or one
// or a revert landed while the session was written; an address not
// verified under SHELF_REQUIRE_VERIFIED_EMAIL): the password is set all
// the same. ErrTokenStale when the account was deleted, or its password
// moved on again, while the session was written: no token is handed out,
// and the token stays unfinished (its retry finds it stale too).
func (a *Service) resetSession(ctx context.Context, u domain.User, client Client) (LoginResult, error) {
	if a.mayLogIn(ctx, u.Credentials()) != nil {
		return LoginResult{}, nil
	}
	if factors, err := a.confirmedFactors(ctx, u.ID); err != nil || len(factors) > 0 {
		// A reset proves the mailbox and sets the password; the factor
		// still stands between them and a session.
		if err != nil {
			return LoginResult{}, err
		}
		return a.challenge(ctx, u.Access(), domain.MadeReset, factors)
	}
	opened, err := a.openSession(ctx, u.Access(), client, ErrTokenStale, domain.MadeReset)
	if errors.Is(err, domain.ErrForbidden) {
		return LoginResult{}, nil // suspended, or reverted, meanwhile
	}
	return opened, err
}
