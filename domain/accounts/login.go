package accounts

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"shelf/domain"
)

// ErrInvalidCredentials answers every failed login the same way, whether
// the login is unknown or the password wrong.
var ErrInvalidCredentials = &domain.Error{Kind: domain.ErrUnauthorized, Code: "invalid_credentials",
	Message: "The login or the password is wrong."}

// ErrDeletionSession answers a session whose account is being deleted or
// is deleted: 401 like any session that no longer works, except for the
// request that finishes the deletion (DELETE /v1/users/{its own id}, or
// POST /v1/users/{its own id}/deletion), which Authenticate hands the
// principal with it.
var ErrDeletionSession = &domain.Error{Kind: domain.ErrUnauthorized, Code: "unauthorized",
	Message: domain.ErrNoSession.Message}

// NewToken returns a session token for the user and the hash that is
// stored. The token is the user id, a dot and 32 random bytes (base64url):
// the id lets a request read the session and the account at once (one
// round trip, see Authenticate); the random part is what makes it secret.
func NewToken(userID string) (token, hash string) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	token = userID + "." + base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token)
}

// HashToken is the stored form of a token: a fast hash is right here, since
// a token has 256 random bits and cannot be guessed from its hash.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Client is who logs in, as the transport saw it: kept with the session
// for its owner's list of sessions, never checked or trusted.
type Client struct {
	// UserAgent is the User-Agent header as sent; it is stored cleaned
	// (domain.CleanText) and cut to UserAgentMax characters.
	UserAgent string
	// IP is the client's address ("" when unknown).
	IP string
	// Session is the token hash of the session the request authenticated
	// with ("" for none): a check of a current password counts by it
	// (checkCurrentPassword).
	Session string
}

// UserAgentMax is how many characters of a user agent a session keeps.
const UserAgentMax = 256

// LoginResult is a new session and its account, as the answer shows it;
// or, for an account with a second factor, the challenge its code turns
// into a session (Token empty, ExpiresAt the challenge's).
type LoginResult struct {
	Token     string
	ExpiresAt time.Time
	User      domain.Shown
	Challenge string
	// Methods are the second steps the challenge takes ("totp",
	// "passkey", "recovery_code"); Passkey the options of
	// navigator.credentials.get when one is a passkey.
	Methods []string
	Passkey json.RawMessage
}

// Login checks a username or email and a password and opens a session for
// client, bound to the password epoch it checked. The attempt is counted
// first, by the login as given and the client's address (the throttle),
// and refused over the limit before anything is looked up, known login or
// not. Cost: the throttle's four round trips (the address's try written
// with the login's scope read, the address's scope read, the login's try
// written, its scope read; six from IPv6, whose /56's try and read come
// before the login's), one claim read (an unknown login then reads an
// account nobody holds in the account's place), two account reads (before the
// session write, its credentials; after it, what it checks again and the
// answer shows), the verdict recorded (a right password's tries passed,
// login then address; a wrong one's failures, address then login: two,
// three from IPv6),
// the session's two writes (its index entry, then the session), and
// always one password hash, so an unknown login takes as long as a wrong
// password; the account's factors are read beside its credentials. An
// account with a second factor gets a challenge (one lightweight
// transaction) instead of the session.
func (a *Service) Login(ctx context.Context, login, password string, client Client) (LoginResult, error) {
	attempt, err := a.admit(ctx, a.throttle.Store, a.throttle.Window, a.loginTiers(login, client.IP)...)
	if err != nil {
		// A reset is not counted by the login's tiers and answers with a
		// session (docs/design/throttle.md, "Only the guesser pays").
		return LoginResult{}, aWayPast(err, "If the account is yours, a password reset link "+
			"(POST /v1/password-resets with its email) logs you in without waiting.")
	}
	u, err := a.findLogin(ctx, login)
	unknown := errors.Is(err, domain.ErrNotFound)
	if err != nil && !unknown {
		return LoginResult{}, err
	}
	if err := attempt.inTime(); err != nil {
		return LoginResult{}, err
	}
	if unknown {
		// A burn that could not run (ctx ended waiting for the hasher)
		// fails as a verification that could not would: an answer that
		// went on to a verdict here would tell which logins exist
		// (TestAFullHasherAnswersAnUnknownLoginAsAKnownOne).
		if err := a.hasher.Burn(ctx, password); err != nil {
			return LoginResult{}, fmt.Errorf("verify password: %w", err)
		}
		return LoginResult{}, attempt.verdict(ctx, false)
	}
	ok, rehash, err := a.hasher.Verify(ctx, password, u.PasswordHash)
	if err != nil {
		return LoginResult{}, fmt.Errorf("verify password of %s: %w", u.ID, err)
	}
	if err := attempt.verdict(ctx, ok); err != nil {
		return LoginResult{}, err
	}
	// Only now, with the password right, may the caller learn of a
	// suspension (S3).
	if err := a.mayLogIn(ctx, u.Credentials); err != nil {
		return LoginResult{}, a.suspendedWhy(ctx, u.ID, err)
	}
	if rehash {
		a.rehash(ctx, u.Credentials, password)
	}
	if u.factorErr != nil {
		return LoginResult{}, u.factorErr
	}
	if len(u.factors) > 0 {
		return a.challenge(ctx, u.Access, domain.MadePassword, u.factors)
	}
	opened, err := a.openSession(ctx, u.Access, client, ErrInvalidCredentials, domain.MadePassword)
	if err != nil {
		return LoginResult{}, a.suspendedWhy(ctx, u.ID, err)
	}
	return opened, nil
}

// suspendedWhy adds the suspension's reason to a login's refusal for a
// suspension (the login read only when and until when): one read of the
// account, on this path alone, after the password proved right. Any
// other refusal, or a read that fails, is answered as it was.
func (a *Service) suspendedWhy(ctx context.Context, userID string, err error) error {
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "suspended" {
		return err
	}
	u, gerr := a.users.Get(ctx, userID)
	if gerr != nil || u.Suspension == nil {
		return err
	}
	return domain.ErrSuspended(*u.Suspension)
}

// mayLogIn refuses a session to account u once its caller proved the
// right to one (the password, or a reset token): a suspension in force
// (ErrSuspended), a password a revert made unusable until a reset
// (ErrPasswordResetRequired), and with SHELF_REQUIRE_VERIFIED_EMAIL an
// address not verified (admins excepted: an operator must not depend on
// mail).
func (a *Service) mayLogIn(ctx context.Context, u domain.Credentials) error {
	if err := a.blocked(ctx, u.Access); err != nil {
		return err
	}
	if u.PasswordResetRequired {
		return ErrPasswordResetRequired
	}
	if a.mail.RequireVerified && u.EmailVerifiedAt.IsZero() && !u.IsAdmin() {
		return ErrEmailNotVerified
	}
	return nil
}

// openSession writes a session of u for client, bound to the password
// epoch u was read with, and hands out its token only if the account
// still stands once it is written: the login's, the second step's and
// the completed reset's one way to open a session. gone is the answer when
// the account was deleted or its password moved on meanwhile; a
// suspension that landed meanwhile answers ErrSuspended, a revert
// ErrPasswordResetRequired. Either way the session is deleted again and no
// token handed out. madeWith is what the login proved (Session.MadeWith).
// A session proved by the password (or a reset) alone also reads the
// account's factors again: one confirmed meanwhile (its owner may then
// sign every other session out) stands between the proof and a session,
// so the session is deleted again and the answer is the factor's
// challenge, as the login would have answered had it read the factor.
// Cost: the session's two writes and one account read (SignedIn: what it
// checks and what the answer shows), beside it the factors' read for a
// session without a second factor.
func (a *Service) openSession(ctx context.Context, u domain.Access, client Client, gone error, madeWith ...string) (LoginResult, error) {
	token, hash := NewToken(u.ID)
	now := a.now()
	s := domain.Session{TokenHash: hash, UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(a.cfg.SessionTTL),
		UserAgent: domain.CleanText(client.UserAgent, UserAgentMax), ClientIP: client.IP, PasswordEpoch: u.PasswordEpoch,
		MadeWith: madeWith}
	if err := a.sessions.Create(ctx, s); err != nil {
		return LoginResult{}, err
	}
	// Check again at the end: a suspension, a deletion, a reset or a
	// password change may have landed while the session was opened, after
	// its revocation listed this user's sessions: read the account again,
	// now that the session is written. If it still stands, anything still
	// to come finds this session when it revokes (and a new password's
	// epoch stops it anyway: Authenticate).
	var again domain.SignedIn
	var factors []Factor
	var err, factorsErr error
	oneProof := len(madeWith) < 2
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		switch {
		case i == 0:
			again, err = a.users.SignedIn(ctx, u.ID)
		case oneProof:
			factors, factorsErr = a.confirmedFactors(ctx, u.ID)
		}
	})
	if err = cmp.Or(err, factorsErr); err != nil {
		return LoginResult{}, err
	}
	switch {
	case !again.Access.Visible():
		// Deleted meanwhile: its deletion may have ended the sessions
		// before this one existed.
		err = gone
	case again.PasswordResetRequired:
		// A revert landed meanwhile. Its compare-and-set moved the epoch
		// on as well, so passwordAdmits alone would refuse this session;
		// the mark says why.
		err = ErrPasswordResetRequired
	case again.Access.Status == domain.StatusSuspended && again.Access.PasswordEpoch == s.PasswordEpoch+1:
		// A suspension landed meanwhile, and nothing else: its
		// compare-and-set moved the epoch on by one as well, so
		// passwordAdmits alone would refuse this session as for a
		// password changed; the suspension says why
		// (TestALoginRacingASuspensionIsToldOfIt). One whose end has
		// passed already still admits no session of the epoch before.
		if err = a.blocked(ctx, again.Access); err == nil {
			err = gone
		}
	case !passwordAdmits(again.Access, s):
		// The password checked is not the account's any more.
		err = gone
	default:
		err = a.blocked(ctx, again.Access)
	}
	if err != nil || len(factors) > 0 {
		if derr := a.sessions.Delete(ctx, s); derr != nil {
			return LoginResult{}, derr
		}
		if err != nil {
			return LoginResult{}, err
		}
		return a.challenge(ctx, u, madeWith[0], factors)
	}
	return LoginResult{Token: token, ExpiresAt: s.ExpiresAt, User: a.shown(again.Shown)}, nil
}

// ErrPasswordResetRequired answers a login (or a check of the current
// password) whose password matched, on an account a revert of an email
// change recovered: whoever changed the email knew the password, so it
// opens nothing until a reset sets a new one. A wrong password still gets
// ErrInvalidCredentials, so a guesser learns nothing of the account.
var ErrPasswordResetRequired = &domain.Error{Kind: domain.ErrForbidden, Code: "password_reset_required",
	Message: "A recovery of this account signed every session out, and its password must be replaced: " +
		"follow the reset link mailed to the account's address, or ask for one with POST /v1/password-resets."}

// passwordAdmits reports whether session s may work under u's password:
// its login checked the password u has now (the same epoch; a rehash
// keeps it), or s is the session whose request set it by a change (that
// request proved the password it replaced). A session opened with a
// password changed or reset since never works again, whatever the
// revocation missed: a login in flight, a session write landing late, a
// revocation that failed.
func passwordAdmits(u domain.Access, s domain.Session) bool {
	return s.PasswordEpoch == u.PasswordEpoch || (u.PasswordSession != "" && s.TokenHash == u.PasswordSession)
}

// blocked returns ErrSuspended while u's suspension is in force; one whose
// end has passed no longer blocks, even before the sweeper lifts it. Ended
// by this process's clock and the node's both, as the sweeper and every
// finisher lift it (liftIfEnded): a process whose clock runs ahead lets
// nobody in early. The node is asked only then, between the end and the
// sweeper's lift.
func (a *Service) blocked(ctx context.Context, u domain.Access) error {
	if u.Status != domain.StatusSuspended || u.Suspension == nil {
		return nil
	}
	if u.Suspension.ActiveAt(a.cfg.Now()) {
		return domain.ErrSuspended(*u.Suspension)
	}
	node, err := a.users.NodeNow(ctx)
	if err != nil {
		return err
	}
	if u.Suspension.ActiveAt(node) {
		return domain.ErrSuspended(*u.Suspension)
	}
	return nil
}

// stillAdmits reports whether u, the owner's account read again inside a
// request of theirs, still lets the request's session s act: a
// suspension, a reset or a change by another session that landed since
// s was authenticated stops it there too. A change that names s as the
// session that set a new epoch (a sign-out everywhere else, a new
// address asked for) is decided on it: otherwise a session the
// suspension ended would be named for the epoch after it, and work again
// after the lift (S3, U8).
func (a *Service) stillAdmits(ctx context.Context, u domain.Access, s domain.Session) (bool, error) {
	if !u.Visible() || !passwordAdmits(u, s) {
		return false, nil
	}
	err := a.blocked(ctx, u)
	if errors.Is(err, domain.ErrForbidden) {
		return false, nil
	}
	return err == nil, err
}

// rehash stores a hash with the current parameters; a failure only means
// the next login tries again. The password stays, and so does its epoch:
// its sessions and reset links go on working.
//
// The login read its credentials alone, and a write of the account
// writes every column, so rehash reads the whole row (at SERIAL: what the
// compare-and-set is decided against) and changes its hash only if it is
// still the one the login checked: after a change, a reset or another
// rehash it leaves the row alone. The write is a compare-and-set on the
// version of that read, so a write landing after the read wins and this
// one is dropped: no column is ever written from a narrow read. Cost: one
// hash, one read and one compare-and-set, on this rare path only (the
// hash parameters were raised since the password was set).
func (a *Service) rehash(ctx context.Context, checked domain.Credentials, password string) {
	hash, err := a.hasher.Hash(ctx, password)
	if err != nil {
		return
	}
	u, err := a.users.GetSerial(ctx, checked.ID)
	if err != nil || u.PasswordHash != checked.PasswordHash {
		return
	}
	u.PasswordHash = hash
	u.Version++
	u.UpdatedAt = a.now()
	if _, err := a.users.Update(ctx, u); err != nil {
		a.log.Warn(ctx, "storing a rehashed password failed", "user", u.ID, "error", err.Error())
	}
}

// findByLogin resolves a username or an email (it has an at) to the
// credentials of a visible account through its committed claim; the
// account must still hold that key (a claim left behind by a change that
// died half-way must not lead to it).
func (a *Service) findByLogin(ctx context.Context, login string) (domain.Credentials, error) {
	kind, key, ok := loginKey(login)
	if !ok {
		return domain.Credentials{}, domain.ErrNotFound
	}
	return findThrough(ctx, a, kind, key, a.users.Credentials)
}

// loginKey is the claim a login names: its email's key when it has an
// at (domain.Ats: signup takes a fullwidth one), else its username's; ok
// is false when it is neither (TestAnAddressWithAFullwidthAtIsOneLogin).
func loginKey(login string) (domain.ClaimKind, string, bool) {
	kind := domain.KindUsername
	_, key, fe := domain.NormalizeUsername(login)
	if domain.NamesAnEmail(login) {
		kind = domain.KindEmail
		_, key, fe = domain.NormalizeEmail(login)
	}
	return kind, key, fe == nil
}

// loginAccount is the account a login names, with whether it has a
// second factor (or why that could not be read: told only once the
// password proved right).
type loginAccount struct {
	domain.Credentials
	factors   []Factor
	factorErr error
}

// findLogin is findByLogin for a login: the account's factors are read
// beside its credentials, so knowing whether the password answers a
// challenge costs no round trip more.
func (a *Service) findLogin(ctx context.Context, login string) (loginAccount, error) {
	kind, key, ok := loginKey(login)
	if !ok {
		return loginAccount{}, domain.ErrNotFound
	}
	read, readAccount := false, func(ctx context.Context, id string) (loginAccount, error) {
		var out loginAccount
		var err error
		domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
			if i == 0 {
				out.Credentials, err = a.users.Credentials(ctx, id)
			} else {
				out.factors, out.factorErr = a.confirmedFactors(ctx, id)
			}
		})
		return out, err
	}
	u, err := findThrough(ctx, a, kind, key, func(ctx context.Context, id string) (loginAccount, error) {
		read = true
		return readAccount(ctx, id)
	})
	if errors.Is(err, domain.ErrNotFound) && !read {
		// A key nobody holds reads an account nobody holds, as a known
		// login reads its own: the same round trips before the hash, so
		// the time to a wrong password's answer does not tell which
		// logins exist (TestAnUnknownLoginReadsWhatAKnownOneReads). Its
		// account is none; but a read that fails answers as a known
		// login's does, or a node failing reads would answer a known
		// login 503 and an unknown one 401
		// (TestAnUnknownLoginsAccountReadThatFailsIsAnsweredAsAKnownOnes).
		if _, rerr := readAccount(ctx, domain.NewID(domain.UserIDPrefix)); rerr != nil && !errors.Is(rerr, domain.ErrNotFound) {
			return loginAccount{}, rerr
		}
	}
	return u, err
}

// findByKey follows a committed claim to its account, read whole.
func (a *Service) findByKey(ctx context.Context, kind domain.ClaimKind, key string) (domain.User, error) {
	return findThrough(ctx, a, kind, key, a.users.Get)
}

// findShown is findByKey for a lookup that shows the account: it reads
// the full view's columns and the keys (users.Claimed), not the row.
func (a *Service) findShown(ctx context.Context, kind domain.ClaimKind, key string) (domain.Shown, error) {
	c, err := findThrough(ctx, a, kind, key, a.users.Claimed)
	return c.Shown, err
}

// claimHolder is a read of an account that tells whether it is visible
// and which keys it holds.
type claimHolder interface {
	Visible() bool
	KeyOf(domain.ClaimKind) string
}

// findThrough follows a committed claim to its account, read by read, and
// checks that the account is visible and still holds that key (a claim
// left behind by a change that died half-way must not lead to it).
func findThrough[V claimHolder](ctx context.Context, a *Service, kind domain.ClaimKind, key string, read func(context.Context, string) (V, error)) (V, error) {
	var none V
	id, err := a.claimedBy(ctx, kind, key)
	if err != nil {
		return none, err
	}
	v, err := read(ctx, id)
	if err != nil {
		return none, err
	}
	if !v.Visible() || v.KeyOf(kind) != key {
		return none, domain.ErrNotFound
	}
	return v, nil
}

// Authenticate turns a bearer token into the caller: the session and the
// account are read at once (the token names the account), so one round
// trip. A session works only while its account is visible and not
// suspended, and while its login's password is the account's
// (passwordAdmits): a suspension, a reset or a password change stops its
// sessions on their next request even if revoking them failed or missed
// one (S3, U8). A token that does not begin with a user id (the older
// form) costs two round trips: the session, then the account.
func (a *Service) Authenticate(ctx context.Context, token string) (domain.Principal, error) {
	if token == "" {
		return domain.Principal{}, domain.ErrNoSession
	}
	var s domain.Session
	var u domain.Access
	var sessErr, userErr error
	if id, _, ok := strings.Cut(token, "."); ok && domain.ValidID(id, domain.UserIDPrefix) {
		domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
			if i == 0 {
				s, sessErr = a.sessions.Get(ctx, HashToken(token))
			} else {
				u, userErr = a.users.Access(ctx, id)
			}
		})
	} else {
		s, sessErr = a.sessions.Get(ctx, HashToken(token))
		if sessErr == nil {
			u, userErr = a.users.Access(ctx, s.UserID)
		}
	}
	for _, err := range []error{sessErr, userErr} {
		if errors.Is(err, domain.ErrNotFound) {
			return domain.Principal{}, domain.ErrNoSession
		}
		if err != nil {
			return domain.Principal{}, err
		}
	}
	if s.UserID != u.ID || !a.cfg.Now().Before(s.ExpiresAt) || !passwordAdmits(u, s) {
		return domain.Principal{}, domain.ErrNoSession
	}
	if u.Status == domain.StatusDeleting || u.Status == domain.StatusDeleted {
		// The session of an account being deleted works for nothing but
		// finishing that deletion (DeleteUser ends it last).
		return domain.Principal{UserID: s.UserID, Session: s, Account: &u}, ErrDeletionSession
	}
	if !u.Visible() {
		return domain.Principal{}, domain.ErrNoSession
	}
	if err := a.blocked(ctx, u); errors.Is(err, domain.ErrForbidden) {
		return domain.Principal{}, domain.ErrNoSession
	} else if err != nil {
		return domain.Principal{}, err
	}
	a.sighted(ctx, s)
	return domain.Principal{UserID: s.UserID, Session: s, Account: &u}, nil
}

// Logout revokes the caller's session.
func (a *Service) Logout(ctx context.Context, p domain.Principal) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	return a.sessions.Delete(ctx, p.Session)
}
