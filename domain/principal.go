package domain

import "time"

// Session is a login. The token itself is never stored: only its hash.
type Session struct {
	TokenHash string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
	// Written is the session's write timestamp in the store (µs), so that
	// revoking it shadows it whatever clock wrote it; 0 when unknown.
	Written int64
}

// Principal is who is calling: a user id and the session, or nobody.
type Principal struct {
	UserID  string
	Session Session
	// Account is the caller's account as read with the session, in this
	// request (nil when not read): checks of roles and status use it.
	Account *User
}

// Anonymous reports a caller without a session.
func (p Principal) Anonymous() bool { return p.UserID == "" }
