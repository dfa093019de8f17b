package domain

import (
	"context"
	"errors"
	"slices"
	"time"
)

// errForbidden: the caller is known but may not do this.
var errForbidden = &Error{Kind: ErrForbidden, Code: "forbidden", Message: "You may not do this."}

// errUserNotFound answers for unknown, malformed and pending ids alike.
var errUserNotFound = &Error{Kind: ErrNotFound, Code: "not_found", Message: "No such user."}

// caller loads the calling user's account (for roles and status); nil for
// an anonymous caller.
func (a *Accounts) caller(ctx context.Context, p Principal) (*User, error) {
	if p.Anonymous() {
		return nil, nil
	}
	u, err := a.users.Get(ctx, p.UserID)
	if errors.Is(err, ErrNotFound) {
		return nil, errNoSession // the account behind the session is gone
	}
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// RequireAdmin answers 401 for no session and 403 for a non-admin.
func (a *Accounts) RequireAdmin(ctx context.Context, p Principal) (User, error) {
	if p.Anonymous() {
		return User{}, errNoSession
	}
	c, err := a.caller(ctx, p)
	if err != nil {
		return User{}, err
	}
	if !c.IsAdmin() || c.Status != StatusActive {
		return User{}, errForbidden
	}
	return *c, nil
}

// UserView is an account as one viewer may see it: the email only for the
// user themself and admins.
type UserView struct {
	User      User
	ShowEmail bool
}

// view decides what viewer p may see of u.
func (a *Accounts) view(ctx context.Context, p Principal, u User) (UserView, error) {
	if p.UserID == u.ID {
		return UserView{User: u, ShowEmail: true}, nil
	}
	c, err := a.caller(ctx, p)
	if err != nil {
		return UserView{}, err
	}
	return UserView{User: u, ShowEmail: c != nil && c.IsAdmin()}, nil
}

// GetUser returns a visible account by id.
func (a *Accounts) GetUser(ctx context.Context, p Principal, id string) (UserView, error) {
	if !ValidID(id, UserIDPrefix) {
		return UserView{}, errUserNotFound
	}
	u, err := a.users.Get(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && !u.Visible()) {
		return UserView{}, errUserNotFound
	}
	if err != nil {
		return UserView{}, err
	}
	return a.view(ctx, p, u)
}

// GetByUsername returns a visible account by username: one claim read and
// one account read.
func (a *Accounts) GetByUsername(ctx context.Context, p Principal, username string) (UserView, error) {
	_, key, fe := NormalizeUsername(username)
	if fe != nil {
		return UserView{}, errUserNotFound
	}
	u, err := a.findByKey(ctx, KindUsername, key)
	if errors.Is(err, ErrNotFound) {
		return UserView{}, errUserNotFound
	}
	if err != nil {
		return UserView{}, err
	}
	return a.view(ctx, p, u)
}

// GetByEmail returns an account by email, for admins only.
func (a *Accounts) GetByEmail(ctx context.Context, p Principal, email string) (UserView, error) {
	if _, err := a.RequireAdmin(ctx, p); err != nil {
		return UserView{}, err
	}
	_, key, fe := NormalizeEmail(email)
	if fe != nil {
		return UserView{}, errUserNotFound
	}
	u, err := a.findByKey(ctx, KindEmail, key)
	if errors.Is(err, ErrNotFound) {
		return UserView{}, errUserNotFound
	}
	if err != nil {
		return UserView{}, err
	}
	return UserView{User: u, ShowEmail: true}, nil
}

// UpdateInput is a change of account; nil fields stay as they are.
type UpdateInput struct {
	DisplayName *string
	Username    *string
	Email       *string
}

// maxChangeAttempts bounds the retries of a change that lost a race with
// another change of the same account.
const maxChangeAttempts = 8

// UpdateUser changes an account's display name, username or email, by the
// user or an admin. A new username or email is claimed and committed first,
// then the account is compared-and-set on its version, then the old claim
// is released: a failure at any step leaves the old values in place.
func (a *Accounts) UpdateUser(ctx context.Context, p Principal, id string, in UpdateInput) (UserView, error) {
	if p.Anonymous() {
		return UserView{}, errNoSession
	}
	if !ValidID(id, UserIDPrefix) {
		return UserView{}, errUserNotFound
	}
	if p.UserID != id {
		if _, err := a.RequireAdmin(ctx, p); err != nil {
			return UserView{}, err
		}
	}
	var username, usernameKey, email, emailKey, display string
	var fes []*FieldError
	if in.Username != nil {
		var fe *FieldError
		username, usernameKey, fe = NormalizeUsername(*in.Username)
		fes = append(fes, fe)
	}
	if in.Email != nil {
		var fe *FieldError
		email, emailKey, fe = NormalizeEmail(*in.Email)
		fes = append(fes, fe)
	}
	if in.DisplayName != nil {
		var fe *FieldError
		display, fe = NormalizeDisplayName(*in.DisplayName)
		fes = append(fes, fe)
	}
	if err := invalidFields(fes...); err != nil {
		return UserView{}, err
	}
	op := NewID("op_")
	for attempt := 0; attempt < maxChangeAttempts; attempt++ {
		if attempt > 0 {
			if err := sleepCtx(ctx, time.Duration(attempt*attempt)*20*time.Millisecond); err != nil {
				return UserView{}, err
			}
		}
		u, err := a.users.GetSerial(ctx, id)
		if errors.Is(err, ErrNotFound) || (err == nil && !u.Visible()) {
			return UserView{}, errUserNotFound
		}
		if err != nil {
			return UserView{}, err
		}
		next := u
		var keys []keyClaim
		var old []keyClaim
		if in.Username != nil {
			next.Username, next.UsernameKey = username, usernameKey
			if usernameKey != u.UsernameKey {
				keys = append(keys, keyClaim{KindUsername, usernameKey, "username"})
				old = append(old, keyClaim{KindUsername, u.UsernameKey, "username"})
			}
		}
		if in.Email != nil {
			next.Email, next.EmailKey = email, emailKey
			if emailKey != u.EmailKey {
				keys = append(keys, keyClaim{KindEmail, emailKey, "email"})
				old = append(old, keyClaim{KindEmail, u.EmailKey, "email"})
			}
		}
		if in.DisplayName != nil {
			next.DisplayName = display
		}
		held, conflict, err := a.acquireAll(ctx, keys, id, op)
		if err != nil || conflict != nil {
			a.releaseAll(ctx, held, id, op)
			if err != nil {
				return UserView{}, err
			}
			if conflict == errBusy {
				continue
			}
			return UserView{}, conflict
		}
		if ok, err := a.commitAll(ctx, held, id, op); err != nil || !ok {
			a.releaseAll(ctx, held, id, op)
			if err != nil {
				return UserView{}, err
			}
			continue // our lease ran out: start over
		}
		next.Version = u.Version + 1
		next.UpdatedAt = a.cfg.Now().UTC().Truncate(time.Millisecond)
		applied, err := a.users.Update(ctx, next)
		if err != nil {
			// Unknown even after the SERIAL read: keep everything; the new
			// claims are committed to this account and a retry completes.
			return UserView{}, err
		}
		if !applied {
			a.releaseAll(ctx, held, id, op) // another change won: start over
			continue
		}
		a.releaseOld(ctx, old, id)
		return UserView{User: next, ShowEmail: true}, nil
	}
	return UserView{}, errBusy
}

// releaseOld gives back the keys an account no longer holds. Each is
// deleted only if it is still this account's committed claim of the
// operation found by reading it, so a new claim of the same key by anyone is
// never touched.
func (a *Accounts) releaseOld(ctx context.Context, old []keyClaim, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ClaimLease)
	defer cancel()
	parallel(len(old), func(i int) {
		c, err := a.claims.Lookup(ctx, old[i].kind, old[i].key)
		if err != nil || c.Owner != id || c.State != ClaimCommitted {
			return
		}
		if err := a.claims.Release(ctx, c.Kind, c.Key, id, c.Op); err != nil {
			a.log.Warn(ctx, "releasing an old claim failed; it stays reserved for the account", "user", id, "error", err.Error())
		}
	})
}

// ChangePassword sets a new password after checking the current one, and
// revokes every other session of the user.
func (a *Accounts) ChangePassword(ctx context.Context, p Principal, id, current, next string) error {
	if p.Anonymous() {
		return errNoSession
	}
	if p.UserID != id {
		return errForbidden
	}
	for attempt := 0; attempt < maxChangeAttempts; attempt++ {
		u, err := a.users.GetSerial(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return errNoSession
		}
		if err != nil {
			return err
		}
		if fe := CheckPassword("newPassword", next, u.UsernameKey, u.EmailKey); fe != nil {
			return Invalid("The new password is not valid.", *fe)
		}
		ok, _, err := a.hasher.Verify(ctx, current, u.PasswordHash)
		if err != nil {
			return err
		}
		if !ok {
			return ErrInvalidCredentials
		}
		hash, err := a.hasher.Hash(ctx, next)
		if err != nil {
			return err
		}
		u.PasswordHash = hash
		u.Version++
		u.UpdatedAt = a.cfg.Now().UTC().Truncate(time.Millisecond)
		applied, err := a.users.Update(ctx, u)
		if err != nil {
			return err
		}
		if applied {
			return a.sessions.DeleteAll(ctx, id, p.Session.TokenHash)
		}
	}
	return errBusy
}

// SetAdmin grants (or revokes) the admin role of the account with this
// username or email. Doing it twice is the same as doing it once.
func (a *Accounts) SetAdmin(ctx context.Context, login string, admin bool) (User, error) {
	found, err := a.findByLogin(ctx, login)
	if errors.Is(err, ErrNotFound) {
		return User{}, &Error{Kind: ErrNotFound, Code: "not_found", Message: "No user has the username or email " + login + "."}
	}
	if err != nil {
		return User{}, err
	}
	for attempt := 0; attempt < maxChangeAttempts; attempt++ {
		u, err := a.users.GetSerial(ctx, found.ID)
		if err != nil {
			return User{}, err
		}
		if u.IsAdmin() == admin {
			return u, nil
		}
		if admin {
			u.Roles = append(slices.Clone(u.Roles), RoleAdmin)
		} else {
			u.Roles = slices.DeleteFunc(slices.Clone(u.Roles), func(r string) bool { return r == RoleAdmin })
		}
		u.Version++
		u.UpdatedAt = a.cfg.Now().UTC().Truncate(time.Millisecond)
		applied, err := a.users.Update(ctx, u)
		if err != nil {
			return User{}, err
		}
		if applied {
			return u, nil
		}
	}
	return User{}, errBusy
}

// Me returns the caller's own account.
func (a *Accounts) Me(ctx context.Context, p Principal) (User, error) {
	c, err := a.caller(ctx, p)
	if err != nil {
		return User{}, err
	}
	if c == nil {
		return User{}, errNoSession
	}
	return *c, nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
