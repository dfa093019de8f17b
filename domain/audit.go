package domain

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// AuditAction is what an admin did to an account (S6;
// docs/design/account-audit.md).
type AuditAction string

// The actions the audit records (a closed set: openapi.yaml's AuditAction).
const (
	AuditRoleGranted        AuditAction = "role_granted"
	AuditRoleRevoked        AuditAction = "role_revoked"
	AuditEmailChanged       AuditAction = "email_changed"
	AuditUsernameChanged    AuditAction = "username_changed"
	AuditDisplayNameChanged AuditAction = "display_name_changed"
	AuditSuspended          AuditAction = "suspended"
	AuditUnsuspended        AuditAction = "unsuspended"
	AuditDeleted            AuditAction = "deleted"
	// The actions on another account's sessions, which change no account
	// row (AuditAction.OfSessions).
	AuditSessionsListed  AuditAction = "sessions_listed"
	AuditSessionRevoked  AuditAction = "session_revoked"
	AuditSessionsRevoked AuditAction = "sessions_revoked"
	// AuditFactorsListed: another account's second factors listed.
	AuditFactorsListed AuditAction = "factors_listed"
	// AuditFactorRemoved: a second factor of another's account removed.
	AuditFactorRemoved AuditAction = "factor_removed"
	// AuditRecoveryCodeUsed: a recovery code of the account used, by
	// whoever held it (Actor: the account itself), at a login or for a
	// change: the one entry an owner's own action writes.
	AuditRecoveryCodeUsed AuditAction = "recovery_code_used"
)

// AuditActions lists every action, in the contract's order.
var AuditActions = []AuditAction{AuditRoleGranted, AuditRoleRevoked, AuditEmailChanged, AuditUsernameChanged,
	AuditDisplayNameChanged, AuditSuspended, AuditUnsuspended, AuditDeleted,
	AuditSessionsListed, AuditSessionRevoked, AuditSessionsRevoked, AuditFactorsListed, AuditFactorRemoved, AuditRecoveryCodeUsed}

// OfSessions reports an action that changes no account row: one on
// another account's sessions or second factors, or a recovery code's use.
// Such an action writes no account version: its entry is keyed by the
// version it read (0 for a recovery code's use) and its own time, and
// written before the action (no entry, no action;
// docs/design/account-audit.md).
func (a AuditAction) OfSessions() bool {
	return a == AuditSessionsListed || a == AuditSessionRevoked || a == AuditSessionsRevoked || a == AuditFactorsListed || a == AuditFactorRemoved ||
		a == AuditRecoveryCodeUsed
}

// Where an admin action came from.
const (
	// ViaAPI: an HTTP request, with its client's address and user agent.
	ViaAPI = "api"
	// ViaCLI: the `api admin` command on a server (no actor account).
	ViaCLI = "cli"
)

// Origin is where a request came from, as the HTTP layer saw it: the
// client's address (trusted proxies taken into account), its user
// agent, cut to MaxUserAgent bytes, and the public id of its session
// (SessionID; "" without one), which tells a thief replaying an admin's
// token apart from the admin, whose session can then be ended.
type Origin struct {
	IP        string
	UserAgent string
	Session   string
}

// MaxUserAgent bounds the user agent an audit entry keeps: a header is
// the caller's to fill, an entry is kept for good.
const MaxUserAgent = 256

// OriginOf builds an Origin, cutting the user agent on a character
// boundary. A header may carry bytes that are no UTF-8 (HTTP's obs-text),
// which a text column refuses: each run of them is a replacement
// character first.
func OriginOf(ip, userAgent string) Origin {
	userAgent = strings.ToValidUTF8(userAgent, "\uFFFD")
	if len(userAgent) > MaxUserAgent {
		cut := MaxUserAgent
		for cut > 0 && !utf8.RuneStart(userAgent[cut]) {
			cut--
		}
		userAgent = userAgent[:cut]
	}
	return Origin{IP: ip, UserAgent: userAgent}
}

// AuditEntry is one admin action on an account. Its key, (UserID, At,
// Version, Action), and everything in it are decided with the account
// row's compare-and-set that made the change, and carried in the row
// (User.AdminChange) until the next admin action: so every write of one
// entry, the action's own, a retry's, a reader's or one landing late,
// writes the same row with the same values, and none is written for a
// change that never took effect.
type AuditEntry struct {
	UserID string
	// At is when the change was made, as the row records it.
	At time.Time
	// Version is the account version the change wrote.
	Version int
	Action  AuditAction
	// Actor is the admin who acted; empty for the command line.
	Actor string
	// Via is ViaAPI or ViaCLI; From is the request's origin (ViaAPI).
	Via  string
	From Origin
	// Old and New are the value before and after, for the changes of a
	// name or an email; never a password, a hash or a token.
	Old, New string
	// Reason and Until are a suspension's (Until zero: until lifted).
	Reason string
	Until  time.Time
}

// ID names the entry among its account's: the version and the action,
// and for an action on sessions (which writes no version, so several
// share one) its time in milliseconds too.
func (e AuditEntry) ID() string {
	id := strconv.Itoa(e.Version) + "." + string(e.Action)
	if e.Action.OfSessions() {
		id += "." + strconv.FormatInt(e.At.UnixMilli(), 10)
	}
	return id
}

// AuditRecorder writes audit entries. A write of an entry already there
// rewrites the same row with the same values.
type AuditRecorder interface {
	Record(ctx context.Context, entries []AuditEntry) error
}

// CarryAdminChange makes u carry the entries of an admin action about to
// be written by u's compare-and-set: the entries the row carried, of the
// last admin action, are written first (an action that stopped after its
// compare-and-set left them to whoever came next), since the row is
// where they live until then. With no entries, u keeps what it carries
// (written all the same: a retry of an action that applied finds nothing
// left to change, and finishes its entries this way).
func CarryAdminChange(ctx context.Context, log AuditRecorder, u *User, entries []AuditEntry) error {
	if len(u.AdminChange) > 0 {
		if err := log.Record(ctx, u.AdminChange); err != nil {
			return err
		}
	}
	if len(entries) > 0 {
		u.AdminChange = entries
	}
	return nil
}

// RecordApplied writes the entries of an action whose compare-and-set
// applied. A failure is only logged: the change took effect, and its
// entries are safe in the account row for the next admin action on the
// account or the next read of its audit (CarryAdminChange), though not
// in the audit of every account until then. So the write does not end
// with the caller's context: a caller who hangs up once his
// compare-and-set is sent would otherwise leave each of his actions out
// of the audit of every account at will
// (TestAnAdminWhoHangsUpAfterHisChangeIsStillInTheAuditOfEveryAccount);
// it has recordAppliedTimeout of its own. It returns the failure, for a
// caller that keeps a record of intent until the entries are written.
func RecordApplied(ctx context.Context, rec AuditRecorder, log Logger, entries []AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordAppliedTimeout)
	defer cancel()
	err := rec.Record(ctx, entries)
	if err != nil {
		log.Warn(ctx, "writing the audit of an admin action failed; the account row keeps it",
			"user", entries[0].UserID, "error", err.Error())
	}
	return err
}

// recordAppliedTimeout bounds the write of an applied action's entries,
// which no longer ends with its caller's context.
const recordAppliedTimeout = 10 * time.Second

// AuditCursor is a position in an account's audit.
type AuditCursor struct {
	At      time.Time
	Version int
	Action  AuditAction
}

// Encode makes the opaque cursor a client sends back.
func (c AuditCursor) Encode() string {
	return EncodeCursor(strconv.FormatInt(c.At.UnixMilli(), 10), strconv.Itoa(c.Version), string(c.Action))
}

// DecodeAuditCursor reads a cursor from Encode. A recovery code's use is
// written at version 0 (no account version decides it), so a page ending
// at one hands out a cursor of version 0.
func DecodeAuditCursor(s string) (*AuditCursor, error) {
	f, err := DecodeCursor(s, 3)
	if err != nil {
		return nil, err
	}
	at, err1 := CursorTime(f[0])
	v, err2 := strconv.Atoi(f[1])
	least := 1
	if AuditAction(f[2]) == AuditRecoveryCodeUsed {
		least = 0
	}
	if err1 != nil || err2 != nil || v < least || v > maxAuditVersion || !validAction(AuditAction(f[2])) {
		return nil, ErrBadCursor
	}
	return &AuditCursor{At: at, Version: v, Action: AuditAction(f[2])}, nil
}

// maxAuditVersion is the largest version the audit's tables hold (a CQL
// int): the driver refuses to bind a larger one, so a cursor past it is
// no position but a bad cursor (TestAuditCursorsRefuseAVersionTheColumnCannotHold).
const maxAuditVersion = math.MaxInt32

func validAction(a AuditAction) bool { return slices.Contains(AuditActions, a) }

// CursorOf is the position of e.
func (e AuditEntry) CursorOf() AuditCursor {
	return AuditCursor{At: e.At, Version: e.Version, Action: e.Action}
}

// AuditPosition is an entry's place in the audit of every account, in a
// day: its time, account, version and action (all descending).
type AuditPosition struct {
	At      time.Time
	UserID  string
	Version int
	Action  AuditAction
}

// PositionOf is e's place in the audit of every account.
func (e AuditEntry) PositionOf() AuditPosition {
	return AuditPosition{At: e.At, UserID: e.UserID, Version: e.Version, Action: e.Action}
}

// Before reports whether p comes after q in the audit's order: older,
// or at the same time a smaller key.
func (p AuditPosition) Before(q AuditPosition) bool {
	switch {
	case !p.At.Equal(q.At):
		return p.At.Before(q.At)
	case p.UserID != q.UserID:
		return p.UserID < q.UserID
	case p.Version != q.Version:
		return p.Version < q.Version
	}
	return p.Action < q.Action
}

// AuditDay is the day (midnight, UTC) whose partition holds an entry of t.
func AuditDay(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// GlobalAuditCursor is a position in the audit of every account: a day
// and, in it, the last entry shown (nil: from the day's newest).
type GlobalAuditCursor struct {
	Day   time.Time
	After *AuditPosition
}

// Encode makes the opaque cursor a client sends back.
func (c GlobalAuditCursor) Encode() string {
	day := strconv.FormatInt(c.Day.UnixMilli(), 10)
	if c.After == nil {
		return EncodeCursor(day, "", "", "", "")
	}
	a := c.After
	return EncodeCursor(day, strconv.FormatInt(a.At.UnixMilli(), 10), a.UserID, strconv.Itoa(a.Version), string(a.Action))
}

// DecodeGlobalAuditCursor reads a cursor from Encode.
func DecodeGlobalAuditCursor(s string) (*GlobalAuditCursor, error) {
	f, err := DecodeCursor(s, 5)
	if err != nil {
		return nil, err
	}
	day, err := CursorTime(f[0])
	if err != nil || !AuditDay(day).Equal(day) {
		return nil, ErrBadCursor
	}
	c := &GlobalAuditCursor{Day: day}
	if f[1] == "" && f[2] == "" && f[3] == "" && f[4] == "" {
		return c, nil
	}
	at, err1 := CursorTime(f[1])
	v, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || v < 0 || v > maxAuditVersion || !ValidID(f[2], UserIDPrefix) || !validAction(AuditAction(f[4])) {
		return nil, ErrBadCursor
	}
	c.After = &AuditPosition{At: at, UserID: f[2], Version: v, Action: AuditAction(f[4])}
	return c, nil
}
