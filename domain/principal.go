package domain

import (
	"crypto/sha256"
	"time"
)

// Session is a login. The token itself is never stored: only its hash.
type Session struct {
	TokenHash string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
	// Written is the session's write timestamp in the store (µs), so that
	// revoking it shadows it whatever clock wrote it; 0 when unknown.
	Written int64
	// LastSeen is when a request of the session was last recorded (zero:
	// none since the login); it is kept at most once per interval, so it
	// may lag by that much.
	LastSeen time.Time
	// UserAgent and ClientIP are the client that logged in ("" when
	// unknown: a client that sent none, or a session from before they were
	// kept).
	UserAgent string
	ClientIP  string
	// PasswordEpoch is the account's User.PasswordEpoch when the login
	// checked its password (0 for sessions from before it was kept).
	PasswordEpoch int
	// MadeWith is what its login proved, in order: MadePassword or
	// MadeReset, then MadeTOTP, MadePasskey or MadeRecoveryCode for an account with a
	// second factor (nil for sessions from before it was kept).
	MadeWith []string
}

// What a login proved (Session.MadeWith).
const (
	MadePassword     = "password"
	MadeReset        = "reset"
	MadeTOTP         = "totp"
	MadeRecoveryCode = "recovery_code"
	MadePasskey      = "passkey"
)

// ID is the session's public id: SessionIDPrefix and 128 bits of a hash of
// the token hash. It names the session in its owner's list without being
// usable for anything else: neither the token nor its stored hash can be
// worked back from it, and it needs no column of its own, so every
// session has one, however old.
func (s Session) ID() string { return SessionID(s.TokenHash) }

// SessionID is the public id of the session whose token hashes to
// tokenHash (see Session.ID).
func SessionID(tokenHash string) string {
	sum := sha256.Sum256([]byte("shelf session id\x00" + tokenHash))
	return SessionIDPrefix + idEncoding.EncodeToString(sum[:16])
}

// Seen is when the session was last seen: LastSeen, or its login when no
// request has been recorded since.
func (s Session) Seen() time.Time {
	if s.LastSeen.After(s.CreatedAt) {
		return s.LastSeen
	}
	return s.CreatedAt
}

// Principal is who is calling: a user id and the session, or nobody.
type Principal struct {
	UserID  string
	Session Session
	// Account is what was read of the caller's account with the session,
	// in this request (nil when not read): checks of roles and status use
	// it. It is the access view alone, never a User to write back.
	Account *Access
	// From is where the request came from (zero outside an HTTP request):
	// what an audit entry of the caller's action records.
	From Origin
}

// Anonymous reports a caller without a session.
func (p Principal) Anonymous() bool { return p.UserID == "" }
