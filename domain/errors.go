package domain

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The error vocabulary. Services return these (or wrap them); the HTTP layer
// maps each to one status in one table. Driver errors never pass through
// unwrapped: a repository turns "row not found" into ErrNotFound.
var (
	// ErrNotFound: the thing does not exist, or the caller may not know it does.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request is valid but collides with the current state.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request breaks a business rule.
	ErrInvalid = errors.New("invalid")
	// ErrUnauthorized: no valid session.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: a valid session that may not do this.
	ErrForbidden = errors.New("forbidden")
	// ErrUnavailable: a dependency (Cassandra) cannot answer right now.
	ErrUnavailable = errors.New("unavailable")
	// ErrNotConfigured: a feature the operator has not set up (mail,
	// second factors, passkeys). Unavailable, and so until the operator
	// sets it up, not in a second: its answer says no Retry-After.
	ErrNotConfigured = fmt.Errorf("%w: not configured", ErrUnavailable)
	// ErrSchemaBehind: the database answers but has not been migrated to
	// this release's schema.
	ErrSchemaBehind = errors.New("schema is behind")
	// ErrOutcomeUnknown: a write's answer was lost and reading the row
	// back could not prove it applied: it may have (and been overwritten
	// since), or may still land. Nothing may be undone on it; it always
	// comes with ErrUnavailable (503), and the retry or a repair finishes.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrTooManyAttempts: this kind of attempt has been refused until its
	// throttle lets one through again (Error.RetryAfter says when).
	ErrTooManyAttempts = errors.New("too many attempts")
)

// Error is a domain error with a stable code, a message for people and,
// where fields are at fault, which ones. Kind is one of the sentinel errors
// above, or an *Error it says more precisely (ErrDenied, for a refusal
// built by Denied), so errors.Is(err, ErrConflict) works on it.
type Error struct {
	Kind    error
	Code    string
	Message string
	Fields  []FieldError
	// Details are extra members of the answer (e.g. suspendedAt), named
	// as in the API.
	Details map[string]any
	// RetryAfter, when positive, is how long the caller should wait
	// before trying again (the answer's Retry-After).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return fmt.Sprintf("%s (%s)", e.Message, strings.Join(parts, "; "))
}

// Unwrap lets errors.Is match the Kind.
func (e *Error) Unwrap() error { return e.Kind }

// FieldError names one field of a request and what is wrong with it.
type FieldError struct {
	// Field is the JSON name of the field, e.g. "email".
	Field string
	// Code is a stable snake_case reason, e.g. "taken" or "too_long".
	Code string
	// Message is a sentence for people.
	Message string
}

// Invalid builds an ErrInvalid error for the given fields.
func Invalid(message string, fields ...FieldError) *Error {
	return &Error{Kind: ErrInvalid, Code: "validation_failed", Message: message, Fields: fields}
}

// InvalidFields joins field errors into one ErrInvalid, or nil.
func InvalidFields(fes ...*FieldError) error {
	var fields []FieldError
	for _, fe := range fes {
		if fe != nil {
			fields = append(fields, *fe)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return Invalid("Some fields are not valid.", fields...)
}

// ErrNoSession: the token is missing, unknown, expired or revoked, or the
// account behind it is gone.
var ErrNoSession = &Error{Kind: ErrUnauthorized, Code: "unauthorized",
	Message: "A valid session is required: log in and send Authorization: Bearer <token>."}

// ErrDenied: the caller is known but may not do this.
var ErrDenied = &Error{Kind: ErrForbidden, Code: "forbidden", Message: "You may not do this."}

// Denied is ErrDenied saying who may (an admin, the group's managers, the
// account's owner), so that the caller knows which right she lacks and
// whom to ask; errors.Is(err, ErrDenied) holds for it.
func Denied(message string) *Error {
	return &Error{Kind: ErrDenied, Code: "forbidden", Message: message}
}

// ErrUserNotFound answers for unknown, malformed and pending ids alike.
var ErrUserNotFound = &Error{Kind: ErrNotFound, Code: "not_found", Message: "No such user."}

// ErrBadCursor: a cursor this service did not make.
var ErrBadCursor = Invalid("The cursor is not valid; start again without one.",
	FieldError{Field: "cursor", Code: "invalid", Message: "is not a cursor this list returned"})

// ErrBusy: a change kept losing its compare-and-set (or a key it needs
// stayed held by another change of the same account) until Retry gave up.
var ErrBusy = &Error{Kind: ErrConflict, Code: "concurrent_change",
	Message: "Another change of this account is in progress; try again."}

// HoldFor is how long an admin's (or a recovery's) round that follows a lost one holds
// the account's other changes back (User.ModerationHeld): a few rounds'
// time.
const HoldFor = 5 * time.Second

// ErrHeldForModeration: an admin's suspension or unsuspension of the
// account (or his deletion of it, his ending of its sessions, his
// removal of its factor or his change of it, or the operator's grant or
// revocation of its role), or the owner's recovery by a mailed link (a
// reset, a revert), lost a round to another change and holds the
// account's changes back for a few seconds (User.ModerationHeld), so
// that a user cannot keep his own suspension from landing, nor a thief
// with a session the owner's recovery, by changing the account over and
// over. errors.Is(err, ErrBusy) holds for it.
var ErrHeldForModeration = &Error{Kind: ErrBusy, Code: "concurrent_change", RetryAfter: HoldFor,
	Message: "An admin, or a recovery by a mailed link, is changing this account's standing right now; try again in a few seconds."}
