package accounts

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"shelf/domain"
)

// Re-authentication (U9, docs/design/reauthentication.md): what can
// take an account (its username, its email, its password, its deletion)
// needs the current password from its owner, whatever session asks, and
// a second factor's code, recovery code or passkey answer where the
// account has one: a stolen token alone must not be enough. A fresh login
// does not stand in for it (a token stolen minutes after a login would
// be); always the password. An admin acting on another account acts by
// role and gives no password of the target's, but never on another
// admin's credentials.

// ErrWrongCurrentPassword answers a current password that does not match:
// 401 invalid_credentials like a failed login, naming the field.
var ErrWrongCurrentPassword = &domain.Error{Kind: domain.ErrUnauthorized, Code: "invalid_credentials",
	Message: "The current password is wrong.",
	Fields:  []domain.FieldError{{Field: "currentPassword", Code: "invalid", Message: "is not the account's password"}}}

// ErrCurrentPasswordRequired answers the owner's change of what takes an
// account, sent without the current password.
var ErrCurrentPasswordRequired = domain.Invalid("Give your current password to change your username or email, or to delete your account.",
	domain.FieldError{Field: "currentPassword", Code: "required", Message: "is required to change the username or email, or to delete the account"})

// ErrOtherAdmin answers an admin acting on another admin's username,
// email or deletion: admins cannot take each other's accounts.
var ErrOtherAdmin = &domain.Error{Kind: domain.ErrForbidden, Code: "forbidden",
	Message: "An admin cannot change another admin's username, email or password, nor delete their account."}

// proveCurrentPassword checks the owner's current password against u as
// read, through the throttle (checkCurrentPassword): nil when it matches,
// a refusal naming currentPassword when it is missing or wrong. current
// is nil when none was sent.
func (a *Service) proveCurrentPassword(ctx context.Context, u domain.User, current *string) error {
	if current == nil || *current == "" {
		return ErrCurrentPasswordRequired
	}
	err := a.checkCurrentPassword(ctx, u, *current)
	if errors.Is(err, ErrInvalidCredentials) {
		return ErrWrongCurrentPassword
	}
	return err
}

// proveOwner checks the owner's proof against u as read: the current
// password (proveCurrentPassword) and, where the account has a confirmed
// second factor, a code of one, a recovery code or a passkey's answer,
// used (proveFactor). Cost: the password's check, and one read of the
// factors; with a factor, the code's throttle and its lightweight
// transaction (a recovery code's audit entry before it; a passkey's
// challenge read first, then used and marked done).
func (a *Service) proveOwner(ctx context.Context, u domain.User, proof Proof) error {
	_, err := a.proveOwnerFactor(ctx, u, proof)
	return err
}

// proveOwnerFactor is proveOwner, and reports whether the proof took a
// factor's (false: the account had none, and the password alone proved
// the owner).
func (a *Service) proveOwnerFactor(ctx context.Context, u domain.User, proof Proof) (bool, error) {
	if err := a.proveCurrentPassword(ctx, u, proof.CurrentPassword); err != nil {
		return false, err
	}
	if a.factors == nil {
		return false, nil
	}
	factors, set, err := a.factors.Read(ctx, u.ID)
	if err != nil {
		return false, err
	}
	if !slices.ContainsFunc(factors, Factor.Confirmed) {
		return false, nil
	}
	return true, a.proveFactor(ctx, u.ID, factors, set, proof)
}

// mayTakeOver checks who may change what takes account u (its username,
// email or existence; its password is the owner's alone to change,
// ChangePassword): the owner with the current password and a factor's
// proof where the account has one (self), or an admin (already checked
// active by the caller) on an account that is not an admin's.
func (a *Service) mayTakeOver(ctx context.Context, p domain.Principal, u domain.User, proof Proof) error {
	if p.UserID == u.ID {
		return a.proveOwner(ctx, u, proof)
	}
	if u.IsAdmin() {
		return ErrOtherAdmin
	}
	return nil
}

// ProveCaller checks the caller's proof of owning their own account, as
// a change of what takes it asks (proveOwner): the current password, and
// a factor's proof where the account has one. For what a stolen session
// alone must not do to what its account manages: closing a group
// (docs/design/closing.md). Decided on the account as it stands: a
// session a suspension, a reset or a sign-out everywhere ended since the
// request was let through proves nothing (401).
func (a *Service) ProveCaller(ctx context.Context, p domain.Principal, proof Proof) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	u, err := a.users.Get(ctx, p.UserID)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.ErrNoSession
	}
	if err != nil {
		return err
	}
	if ok, err := a.stillAdmits(ctx, u.Access(), p.Session); err != nil || !ok {
		return cmp.Or[error](err, domain.ErrNoSession)
	}
	return a.proveOwner(ctx, u, proof)
}
