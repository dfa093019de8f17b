package domain

import (
	"slices"
	"time"
)

// The narrow views of an account. Each is what one use reads of the users
// row, through a statement that lists those columns alone, and none of
// them is a User: a User is written back whole (every column, by a
// compare-and-set on its version), so a value read narrow must never
// become one, and these types leave that to the compiler, not to a
// comment. Each has its conversion from a whole User here: what the fakes
// answer, and what the stores' contract holds the statements to.

// Access is what every authenticated request reads of its account with
// the session: whether the session still works (the account's status,
// its suspension, its password's epoch) and what its caller may do (the
// roles). Principal.Account holds it.
type Access struct {
	ID     string
	Roles  []string
	Status Status
	// Suspension is set while the account is suspended, with SuspendedAt
	// and Until alone: whether it blocks, and what a refusal shows.
	Suspension      *Suspension
	PasswordEpoch   int
	PasswordSession string
}

// Access is u's access view.
func (u User) Access() Access {
	a := Access{ID: u.ID, Roles: u.Roles, Status: u.Status, PasswordEpoch: u.PasswordEpoch, PasswordSession: u.PasswordSession}
	if s := u.Suspension; s != nil {
		a.Suspension = &Suspension{SuspendedAt: s.SuspendedAt, Until: s.Until}
	}
	return a
}

// IsAdmin reports whether the account has the admin role.
func (a Access) IsAdmin() bool { return slices.Contains(a.Roles, RoleAdmin) }

// Visible is User.Visible.
func (a Access) Visible() bool { return a.Status.Visible() }

// Departed is User.Departed.
func (a Access) Departed() bool { return a.Status.Departed() }

// Credentials is what a login reads of the account its claim leads to:
// the access, the keys the claim must still be the account's, the
// password's hash and what else decides whether it may open a session.
type Credentials struct {
	Access
	UsernameKey, EmailKey string
	PasswordHash          string
	PasswordResetRequired bool
	EmailVerifiedAt       time.Time
}

// Credentials is u's login view.
func (u User) Credentials() Credentials {
	return Credentials{Access: u.Access(), UsernameKey: u.UsernameKey, EmailKey: u.EmailKey, PasswordHash: u.PasswordHash,
		PasswordResetRequired: u.PasswordResetRequired, EmailVerifiedAt: u.EmailVerifiedAt}
}

// KeyOf is User.KeyOf.
func (c Credentials) KeyOf(kind ClaimKind) string { return keyOf(kind, c.UsernameKey, c.EmailKey) }

// Profile is an account's public part: what a stranger is shown, and
// what a library or a share checks of the account it names (is it visible,
// is it being deleted).
type Profile struct {
	ID, Username, DisplayName string
	Status                    Status
	CreatedAt                 time.Time
}

// Profile is u's public view.
func (u User) Profile() Profile {
	return Profile{ID: u.ID, Username: u.Username, DisplayName: u.DisplayName, Status: u.Status, CreatedAt: u.CreatedAt}
}

// Visible is User.Visible.
func (p Profile) Visible() bool { return p.Status.Visible() }

// Departed is User.Departed.
func (p Profile) Departed() bool { return p.Status.Departed() }

// Shown is the profile as an answer shows it (its public part alone).
func (p Profile) Shown() Shown {
	return Shown{ID: p.ID, Username: p.Username, DisplayName: p.DisplayName, Status: p.Status, CreatedAt: p.CreatedAt}
}

// Shown is an account as an answer shows it: in full to the user
// themself and to admins, its public part (ID, Username, DisplayName,
// CreatedAt) to anyone. PendingEmailAt is there to tell a change pending
// from one whose link has ended, which shows as none.
type Shown struct {
	ID, Username, DisplayName, Email string
	Roles                            []string
	Status                           Status
	CreatedAt, EmailVerifiedAt       time.Time
	PendingEmail                     string
	PendingEmailAt                   time.Time
	// HeldUsername is the username the account's owner left and it still
	// holds until HeldUsernameUntil (docs/design/renames.md; zero while a
	// suspension without an end stands): set only in the answer of a
	// change (accounts.UpdateUser), which has the whole row; no narrow
	// read lists it.
	HeldUsername      string
	HeldUsernameUntil time.Time
}

// Shown is u as an answer shows it.
func (u User) Shown() Shown {
	return Shown{ID: u.ID, Username: u.Username, DisplayName: u.DisplayName, Email: u.Email, Roles: u.Roles, Status: u.Status,
		CreatedAt: u.CreatedAt, EmailVerifiedAt: u.EmailVerifiedAt, PendingEmail: u.PendingEmail, PendingEmailAt: u.PendingEmailAt}
}

// Visible is User.Visible.
func (s Shown) Visible() bool { return s.Status.Visible() }

// Claimed is an account as a claim on its username or email leads to it:
// the full view, and the keys the claim is checked against (a claim left
// behind by a change that died half-way must not lead to the account).
type Claimed struct {
	Shown
	UsernameKey, EmailKey string
}

// Claimed is u as a claim leads to it.
func (u User) Claimed() Claimed {
	return Claimed{Shown: u.Shown(), UsernameKey: u.UsernameKey, EmailKey: u.EmailKey}
}

// KeyOf is User.KeyOf.
func (c Claimed) KeyOf(kind ClaimKind) string { return keyOf(kind, c.UsernameKey, c.EmailKey) }

// SignedIn is what a login reads once its session is written, to hand
// out the token only if the account still stands: its access, whether a
// revert marked its password unusable meanwhile, and the account as the
// answer shows it.
type SignedIn struct {
	Access                Access
	PasswordResetRequired bool
	Shown                 Shown
}

// SignedIn is u's view after a login.
func (u User) SignedIn() SignedIn {
	return SignedIn{Access: u.Access(), PasswordResetRequired: u.PasswordResetRequired, Shown: u.Shown()}
}

// Standing is an account as moderation shows it: its status and, while
// suspended, the whole suspension.
type Standing struct {
	ID, Username string
	Status       Status
	Suspension   *Suspension
}

// Standing is u's moderation view.
func (u User) Standing() Standing {
	return Standing{ID: u.ID, Username: u.Username, Status: u.Status, Suspension: u.Suspension}
}

// Visible is User.Visible.
func (s Standing) Visible() bool { return s.Status.Visible() }
