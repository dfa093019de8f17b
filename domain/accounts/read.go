package accounts

import (
	"context"
	"errors"
	"slices"
	"time"

	"shelf/domain"
)

// Caller loads the access view of the calling user's account (its roles
// and status); nil for an anonymous caller.
func (a *Service) Caller(ctx context.Context, p domain.Principal) (*domain.Access, error) {
	if p.Anonymous() {
		return nil, nil
	}
	if p.Account != nil && p.Account.ID == p.UserID {
		u := *p.Account // read with the session, in this request
		return &u, nil
	}
	u, err := a.users.Access(ctx, p.UserID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, domain.ErrNoSession // the account behind the session is gone
	}
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// RequireAdmin answers 401 for no session and 403 for a non-admin; with
// RequireAdminFactor, 403 admin_factor_required for a session whose login
// gave no second factor (an app's code, a passkey or a recovery code): a
// password thief gets no admin power.
func (a *Service) RequireAdmin(ctx context.Context, p domain.Principal) (domain.Access, error) {
	if p.Anonymous() {
		return domain.Access{}, domain.ErrNoSession
	}
	if a.cfg.RequireAdminFactor && !slices.ContainsFunc(p.Session.MadeWith, func(m string) bool {
		return m == domain.MadeTOTP || m == domain.MadePasskey || m == domain.MadeRecoveryCode
	}) {
		c, err := a.Caller(ctx, p)
		switch {
		case err != nil:
			return domain.Access{}, err // a read that failed is no refusal
		case c.IsAdmin():
			return domain.Access{}, ErrAdminFactorRequired
		}
		return domain.Access{}, errAdminOnly
	}
	c, err := a.Caller(ctx, p)
	if err != nil {
		return domain.Access{}, err
	}
	if !c.IsAdmin() || c.Status != domain.StatusActive {
		return domain.Access{}, errAdminOnly
	}
	return *c, nil
}

// errAdminOnly refuses a caller who is not an active admin what only
// admins may do (on the whole service, or on what is not the caller's).
var errAdminOnly = domain.Denied("Only an admin may do this, and this session's account is not one: " +
	"it acts on the whole service, or on another account or group than your own.")

// ErrAdminFactorRequired refuses an admin's power to a session made
// without a second factor, under SHELF_REQUIRE_ADMIN_FACTOR.
var ErrAdminFactorRequired = &domain.Error{Kind: domain.ErrForbidden, Code: "admin_factor_required",
	Message: "Admins act here only from a session logged in with a second factor: add an authenticator app or a passkey on your account page if you have none, then log in again with it."}

// UserView is an account as one viewer may see it: its email and status
// only for the user themself and admins (S3: a stranger does not learn
// that an account is suspended).
type UserView struct {
	User domain.Shown
	// Full: the viewer is the user or an admin.
	Full bool
}

// shown is u as a view shows it: a hold that has ended reads as none (a
// change pending past its link's life is no change pending).
func (a *Service) shown(u domain.Shown) domain.Shown {
	if u.PendingEmail != "" && !a.holdsAt(a.cfg.Now()).pendingSince(u.PendingEmailAt) {
		u.PendingEmail, u.PendingEmailAt = "", time.Time{}
	}
	return u
}

// view decides what viewer p may see of u.
func (a *Service) view(ctx context.Context, p domain.Principal, u domain.Shown) (UserView, error) {
	u = a.shown(u)
	if p.UserID == u.ID {
		return UserView{User: u, Full: true}, nil
	}
	c, err := a.Caller(ctx, p)
	if err != nil {
		return UserView{}, err
	}
	return UserView{User: u, Full: c != nil && c.IsAdmin()}, nil
}

// GetUser returns a visible account by id. What it reads is what the
// viewer sees: a stranger's view (anonymous, or a session that is not the
// user's nor an admin's) reads the public columns alone, the user's own
// view and an admin's what the full view shows (Shown).
func (a *Service) GetUser(ctx context.Context, p domain.Principal, id string) (UserView, error) {
	if !domain.ValidID(id, domain.UserIDPrefix) {
		return UserView{}, domain.ErrUserNotFound
	}
	read := a.profile
	if p.UserID == id {
		read = a.users.Shown
	} else if c, err := a.Caller(ctx, p); err != nil {
		return UserView{}, err
	} else if c != nil && c.IsAdmin() {
		read = a.users.Shown
	}
	u, err := read(ctx, id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
		return UserView{}, domain.ErrUserNotFound
	}
	if err != nil {
		return UserView{}, err
	}
	return a.view(ctx, p, u)
}

// profile reads the public columns of account id, as a Shown.
func (a *Service) profile(ctx context.Context, id string) (domain.Shown, error) {
	u, err := a.users.Profile(ctx, id)
	return u.Shown(), err
}

// GetByUsername returns a visible account by username: one claim read and
// one account read.
func (a *Service) GetByUsername(ctx context.Context, p domain.Principal, username string) (UserView, error) {
	_, key, fe := domain.NormalizeUsername(username)
	if fe != nil {
		return UserView{}, domain.ErrUserNotFound
	}
	u, err := a.findShown(ctx, domain.KindUsername, key)
	if errors.Is(err, domain.ErrNotFound) {
		return UserView{}, domain.ErrUserNotFound
	}
	if err != nil {
		return UserView{}, err
	}
	return a.view(ctx, p, u)
}

// GetByEmail returns an account by email, for admins only.
func (a *Service) GetByEmail(ctx context.Context, p domain.Principal, email string) (UserView, error) {
	if _, err := a.RequireAdmin(ctx, p); err != nil {
		return UserView{}, err
	}
	_, key, fe := domain.NormalizeEmail(email)
	if fe != nil {
		return UserView{}, domain.ErrUserNotFound
	}
	u, err := a.findShown(ctx, domain.KindEmail, key)
	if errors.Is(err, domain.ErrNotFound) {
		return UserView{}, domain.ErrUserNotFound
	}
	if err != nil {
		return UserView{}, err
	}
	return UserView{User: a.shown(u), Full: true}, nil
}

// Me returns the caller's own account as its full view shows it: one
// read of those columns (the session's read was of the access alone).
func (a *Service) Me(ctx context.Context, p domain.Principal) (domain.Shown, error) {
	if p.Anonymous() {
		return domain.Shown{}, domain.ErrNoSession
	}
	u, err := a.users.Shown(ctx, p.UserID)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
		// The account behind the session is gone, or its deletion landed
		// since the session was checked: the session works no more.
		return domain.Shown{}, domain.ErrNoSession
	}
	if err != nil {
		return domain.Shown{}, err
	}
	return a.shown(u), nil
}
