package accounts

import (
	"context"
	"fmt"
	"time"

	"shelf/domain"
)

// SignupInput is what a signup asks for.
type SignupInput struct {
	Username    string
	Email       string
	Password    string
	DisplayName *string // optional; the username when absent (nil), refused when empty like any too short name
}

// ErrSignupExpired: the signup took longer than the claim lease, so its
// claims may have passed to someone else. Nothing was kept; try again.
var ErrSignupExpired = &domain.Error{Kind: domain.ErrUnavailable, Code: "signup_expired",
	Message: "The signup took too long and was undone; try again."}

// Signup creates an account with a unique username and email (U1-U4):
// [claim username ∥ claim email ∥ create pending account], then
// [commit both claims], then activate the account. Claims are committed
// before the account becomes active, so an active account never holds a
// name whose claim can still expire; a signup that dies before activation
// leaves a pending account that expires with the lease, and its claims are
// then free: pending ones expire, committed ones are taken over.
func (a *Service) Signup(ctx context.Context, in SignupInput) (domain.User, error) {
	u, err := a.newAccount(ctx, in)
	if err != nil {
		return domain.User{}, err
	}
	// tag is the attempt whose pending row the activation takes: a row
	// written again by an earlier attempt landing late, after this one's
	// expired and another signup took the names over, is never activated
	// (U1, TestALateFirstInsertOfAResentSignupIsNeverActivated).
	var tag string
	err = a.claimer.Create(ctx, domain.Creation{
		ID: u.ID,
		// Username before email: the fixed order of every claimant, which
		// decides who waits and who yields on a split
		// (domain.Claimer.AcquireAll).
		Keys: []domain.Key{
			{Kind: domain.KindUsername, Key: u.UsernameKey, Field: "username"},
			{Kind: domain.KindEmail, Key: u.EmailKey, Field: "email"},
		},
		Holders: holders{a},
		Create: func(ctx context.Context, lease time.Duration) (err error) {
			tag, err = a.users.Create(ctx, u, lease)
			return err
		},
		Activate: func(ctx context.Context) (bool, error) {
			active := u
			active.Status = domain.StatusActive
			return a.users.Activate(ctx, active, tag)
		},
		Discard: func(ctx context.Context) error { return a.users.Discard(ctx, u.ID) },
		Expired: ErrSignupExpired,
		Step:    a.Hooks.step,
	})
	if err != nil {
		return domain.User{}, err
	}
	u.Status = domain.StatusActive
	a.mailVerification(ctx, u)
	return u, nil
}

// newAccount checks a signup and returns the account it asks for, pending,
// with its password hashed.
func (a *Service) newAccount(ctx context.Context, in SignupInput) (domain.User, error) {
	username, usernameKey, fe1 := domain.NormalizeUsername(in.Username)
	email, emailKey, fe2 := domain.NormalizeEmail(in.Email)
	display := username
	var fe3 *domain.FieldError
	if in.DisplayName != nil {
		display, fe3 = domain.NormalizeDisplayName(*in.DisplayName)
	}
	fe4 := a.passwordRules("password", in.Password, usernameKey, emailKey)
	if err := domain.InvalidFields(fe1, fe2, fe3, fe4); err != nil {
		return domain.User{}, err
	}
	if err := a.breachedPassword(ctx, "password", in.Password); err != nil {
		return domain.User{}, err
	}
	hash, err := a.hasher.Hash(ctx, in.Password)
	if err != nil {
		return domain.User{}, fmt.Errorf("hash password: %w", err)
	}
	now := a.now()
	return domain.User{
		ID: domain.NewID(domain.UserIDPrefix), Username: username, UsernameKey: usernameKey,
		Email: email, EmailKey: emailKey, DisplayName: display, PasswordHash: hash,
		Status: domain.StatusPending, CreatedAt: now, UpdatedAt: now, Version: 1,
	}, nil
}
