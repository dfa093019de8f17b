package repository

import (
	"context"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Users keeps accounts. The rows are LWT-managed: every write is a
// lightweight transaction, so none is ever lost to a concurrent one.
type Users struct {
	rows casTable[userRow, *userRow]
}

var _ accounts.UserStore = (*Users)(nil)

// NewUsers returns the account store.
func NewUsers(db *DB) *Users {
	return &Users{rows: casTable[userRow, *userRow]{db: db, name: "users", selectCQL: userSelectCQL,
		writeID: func(r userRow) string { return r.WriteID }, version: func(r userRow) int { return r.Version }, status: func(r userRow) string { return r.Status }}}
}

// userRow is a row of the users table.
type userRow struct {
	ID           string    `db:"id"`
	Username     string    `db:"username"`
	UsernameKey  string    `db:"username_key"`
	Email        string    `db:"email"`
	EmailKey     string    `db:"email_key"`
	DisplayName  string    `db:"display_name"`
	PasswordHash string    `db:"password_hash"`
	Roles        []string  `db:"roles"`
	Status       string    `db:"status"`
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
	Version      int       `db:"version"`
	WriteID      string    `db:"write_id"`
	// The suspension, set while suspended.
	SuspendedAt      time.Time `db:"suspended_at"`
	SuspensionBucket string    `db:"suspension_bucket"`
	SuspensionReason string    `db:"suspension_reason"`
	SuspendedBy      string    `db:"suspended_by"`
	SuspendedUntil   time.Time `db:"suspended_until"`
	// SuspendedUsername is the username the suspension took effect with
	// (040; null before: the username).
	SuspendedUsername string `db:"suspended_username"`
	// The last lift: how the last suspension ended, and that suspension.
	LiftKind          string    `db:"lift_kind"`
	LiftedAt          time.Time `db:"lifted_at"`
	LiftedBy          string    `db:"lifted_by"`
	LiftedSuspendedAt time.Time `db:"lifted_suspended_at"`
	LiftedSuspendedBy string    `db:"lifted_suspended_by"`
	LiftedReason      string    `db:"lifted_reason"`
	LiftedUntil       time.Time `db:"lifted_until"`
	// The deletion, once it began (migration 011).
	DeletedAt time.Time `db:"deleted_at"`
	DeletedBy string    `db:"deleted_by"`
	// DeletionAttempt tags the attempt whose compare-and-set began the
	// deletion (014): its index entry's key.
	DeletionAttempt string `db:"deletion_attempt"`
	// EmailVerifiedAt is when the current email was confirmed (012).
	EmailVerifiedAt time.Time `db:"email_verified_at"`
	// PasswordEpoch counts the password's changes, PasswordSession is the
	// session that made the last by a change (015).
	PasswordEpoch   int    `db:"password_epoch"`
	PasswordSession string `db:"password_session"`
	// AdminChange is the audit of the last admin action, as JSON (016).
	AdminChange string `db:"admin_change"`
	// The email change waiting for its new address's verification, and
	// the address a completed change replaced, held for its revert link
	// (018).
	PendingEmail     string    `db:"pending_email"`
	PendingEmailKey  string    `db:"pending_email_key"`
	PendingEmailAt   time.Time `db:"pending_email_at"`
	RecoveryEmail    string    `db:"recovery_email"`
	RecoveryEmailKey string    `db:"recovery_email_key"`
	RecoveryUntil    time.Time `db:"recovery_until"`
	// The password a revert made unusable until a reset, and the session
	// that asked for the change pending (021).
	PasswordResetRequired bool   `db:"password_reset_required"`
	PendingEmailSession   string `db:"pending_email_session"`
	// RecoveryEpoch counts the recoveries, which a reset link is mailed
	// against (036).
	RecoveryEpoch int `db:"recovery_epoch"`
	// AddressEpoch is the recovery epoch the address came in with (045).
	AddressEpoch int `db:"address_epoch"`
	// HeldUsername is the username the owner's rename left, held for the
	// account until HeldUsernameUntil (047).
	HeldUsername      string    `db:"held_username"`
	HeldUsernameKey   string    `db:"held_username_key"`
	HeldUsernameUntil time.Time `db:"held_username_until"`
	// RefusedEmailKeys are the addresses whose reader said "not me" to a
	// change asking for them: the account may not ask for them again
	// (041).
	RefusedEmailKeys []string `db:"refused_email_keys"`
	// ModerationHold is the tag of a moderation attempt holding the
	// account's other changes back (043): written alone by Hold with a
	// TTL, read by GetSerial, never by a write of the other columns.
	ModerationHold string `db:"moderation_hold"`
}

// columns are userSelectCQL's.
func (r *userRow) columns() []any {
	return []any{&r.ID, &r.Username, &r.UsernameKey, &r.Email, &r.EmailKey, &r.DisplayName, &r.PasswordHash,
		&r.Roles, &r.Status, &r.CreatedAt, &r.UpdatedAt, &r.Version, &r.WriteID, &r.SuspendedAt,
		&r.SuspensionBucket, &r.SuspensionReason, &r.SuspendedBy, &r.SuspendedUntil,
		&r.LiftKind, &r.LiftedAt, &r.LiftedBy, &r.LiftedSuspendedAt, &r.LiftedSuspendedBy, &r.LiftedReason, &r.LiftedUntil,
		&r.DeletedAt, &r.DeletedBy, &r.DeletionAttempt, &r.EmailVerifiedAt, &r.PasswordEpoch, &r.PasswordSession, &r.AdminChange,
		&r.PendingEmail, &r.PendingEmailKey, &r.PendingEmailAt, &r.RecoveryEmail, &r.RecoveryEmailKey, &r.RecoveryUntil,
		&r.PasswordResetRequired, &r.PendingEmailSession, &r.RecoveryEpoch, &r.AddressEpoch, &r.HeldUsername, &r.HeldUsernameKey, &r.HeldUsernameUntil, &r.SuspendedUsername, &r.RefusedEmailKeys, &r.ModerationHold}
}

func fromDomainUser(u domain.User) userRow {
	r := userRow{
		ID: u.ID, Username: u.Username, UsernameKey: u.UsernameKey, Email: u.Email, EmailKey: u.EmailKey,
		DisplayName: u.DisplayName, PasswordHash: u.PasswordHash, Roles: u.Roles, Status: string(u.Status),
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, Version: u.Version, EmailVerifiedAt: u.EmailVerifiedAt,
		PasswordEpoch: u.PasswordEpoch, PasswordSession: u.PasswordSession, AdminChange: encodeAdminChange(u.AdminChange),
		PendingEmail: u.PendingEmail, PendingEmailKey: u.PendingEmailKey, PendingEmailAt: u.PendingEmailAt,
		RecoveryEmail: u.RecoveryEmail, RecoveryEmailKey: u.RecoveryEmailKey, RecoveryUntil: u.RecoveryUntil,
		PasswordResetRequired: u.PasswordResetRequired, PendingEmailSession: u.PendingEmailSession, RecoveryEpoch: u.RecoveryEpoch,
		AddressEpoch: u.AddressEpoch, RefusedEmailKeys: u.RefusedEmailKeys,
		HeldUsername: u.HeldUsername, HeldUsernameKey: u.HeldUsernameKey, HeldUsernameUntil: u.HeldUsernameUntil,
	}
	if s := u.Suspension; s != nil {
		r.SuspendedAt, r.SuspensionBucket, r.SuspensionReason = s.SuspendedAt, s.Bucket, s.Reason
		r.SuspendedBy, r.SuspendedUntil, r.SuspendedUsername = s.SuspendedBy, s.Until, s.Username
	}
	if l := u.LastLift; l != nil {
		r.LiftKind, r.LiftedAt, r.LiftedBy = string(l.Kind), l.At, l.By
		r.LiftedSuspendedAt, r.LiftedSuspendedBy, r.LiftedReason, r.LiftedUntil = l.Suspension.SuspendedAt, l.Suspension.SuspendedBy, l.Suspension.Reason, l.Suspension.Until
	}
	if d := u.Deletion; d != nil {
		r.DeletedAt, r.DeletedBy, r.DeletionAttempt = d.At, d.By, d.Attempt
	}
	return r
}

func (r userRow) toDomain() domain.User {
	u := domain.User{
		ID: r.ID, Username: r.Username, UsernameKey: r.UsernameKey, Email: r.Email, EmailKey: r.EmailKey,
		DisplayName: r.DisplayName, PasswordHash: r.PasswordHash, Roles: r.Roles, Status: domain.Status(r.Status),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Version: r.Version, EmailVerifiedAt: utcOrZero(r.EmailVerifiedAt),
		PasswordEpoch: r.PasswordEpoch, PasswordSession: r.PasswordSession, AdminChange: decodeAdminChange(r.ID, r.AdminChange),
		PendingEmail: r.PendingEmail, PendingEmailKey: r.PendingEmailKey, PendingEmailAt: utcOrZero(r.PendingEmailAt),
		RecoveryEmail: r.RecoveryEmail, RecoveryEmailKey: r.RecoveryEmailKey, RecoveryUntil: utcOrZero(r.RecoveryUntil),
		PasswordResetRequired: r.PasswordResetRequired, PendingEmailSession: r.PendingEmailSession, RecoveryEpoch: r.RecoveryEpoch,
		AddressEpoch: r.AddressEpoch, RefusedEmailKeys: r.RefusedEmailKeys,
		HeldUsername: r.HeldUsername, HeldUsernameKey: r.HeldUsernameKey, HeldUsernameUntil: utcOrZero(r.HeldUsernameUntil), ModerationHeld: r.ModerationHold != "",
		RecoveryHeld: domain.IsRecoveryHold(r.ModerationHold),
	}
	if !r.SuspendedAt.IsZero() {
		u.Suspension = &domain.Suspension{UserID: r.ID, Username: suspendedAs(r.SuspendedUsername, r.Username), Reason: r.SuspensionReason,
			SuspendedAt: r.SuspendedAt.UTC(), SuspendedBy: r.SuspendedBy, Until: utcOrZero(r.SuspendedUntil), Bucket: r.SuspensionBucket}
	}
	if !r.LiftedAt.IsZero() {
		u.LastLift = &domain.Lift{Kind: domain.LiftKind(r.LiftKind), At: r.LiftedAt.UTC(), By: r.LiftedBy,
			Suspension: domain.Suspension{UserID: r.ID, Username: r.Username, Reason: r.LiftedReason,
				SuspendedAt: r.LiftedSuspendedAt.UTC(), SuspendedBy: r.LiftedSuspendedBy, Until: utcOrZero(r.LiftedUntil)}}
	}
	if !r.DeletedAt.IsZero() {
		u.Deletion = &domain.Deletion{At: r.DeletedAt.UTC(), By: r.DeletedBy, Attempt: r.DeletionAttempt}
	}
	return u
}

// suspendedAs is the username a suspension took effect with: the row's
// suspended_username, or for a suspension written before migration 040
// (null there) the account's username.
func suspendedAs(suspendedUsername, username string) string {
	if suspendedUsername == "" {
		return username
	}
	return suspendedUsername
}

// utcOrZero keeps a null timestamp zero (gocql reads it as the zero time).
func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// orAbsent passes v, or absent for a zero value: nil to clear the cell
// (an update ending a suspension), gocql.UnsetValue to leave it alone (a
// new account, which has nothing there, so no tombstone is written).
func orAbsent[T comparable](v T, absent any) any {
	var zero T
	if v == zero {
		return absent
	}
	return v
}

// userColumnNames are the users table's columns but its key, in the order
// of userRow.values: the one list of them. The reads and the insert name
// them through it; the updates' SET clause (userColumns) spells each as
// "name = ?", which a Go constant cannot derive, so
// TestUserStatementsFollowOneColumnList holds it, the insert's
// placeholders and values to this list.
const userColumnNames = `username, username_key, email, email_key, display_name, password_hash, roles, status, created_at, updated_at, version, write_id, suspended_at, suspension_bucket, suspension_reason, suspended_by, suspended_until, lift_kind, lifted_at, lifted_by, lifted_suspended_at, lifted_suspended_by, lifted_reason, lifted_until, deleted_at, deleted_by, deletion_attempt, email_verified_at, password_epoch, password_session, admin_change, pending_email, pending_email_key, pending_email_at, recovery_email, recovery_email_key, recovery_until, password_reset_required, pending_email_session, recovery_epoch, address_epoch, held_username, held_username_key, held_username_until, suspended_username, refused_email_keys`

// userColumns are written together by every write, so a TTL 0 rewrite
// covers them all (TTL is per cell).
const userColumns = `username = ?, username_key = ?, email = ?, email_key = ?, display_name = ?, password_hash = ?, roles = ?, status = ?, created_at = ?, updated_at = ?, version = ?, write_id = ?, suspended_at = ?, suspension_bucket = ?, suspension_reason = ?, suspended_by = ?, suspended_until = ?, lift_kind = ?, lifted_at = ?, lifted_by = ?, lifted_suspended_at = ?, lifted_suspended_by = ?, lifted_reason = ?, lifted_until = ?, deleted_at = ?, deleted_by = ?, deletion_attempt = ?, email_verified_at = ?, password_epoch = ?, password_session = ?, admin_change = ?, pending_email = ?, pending_email_key = ?, pending_email_at = ?, recovery_email = ?, recovery_email_key = ?, recovery_until = ?, password_reset_required = ?, pending_email_session = ?, recovery_epoch = ?, address_epoch = ?, held_username = ?, held_username_key = ?, held_username_until = ?, suspended_username = ?, refused_email_keys = ?`

// userWriteColumnNames are what every write binds: the columns the reads
// scan, and search_grams (019) and username_prefixes (030), which only the
// searches' indexes read. They are derived from the keys and written in the
// same compare-and-set, so an index never says other than the row
// (docs/design/user-search.md, docs/design/people-search.md).
const (
	// userReadColumnNames are what a read of the whole row scans
	// (userRow): the list, and the moderation hold no write binds.
	userReadColumnNames  = userColumnNames + `, moderation_hold`
	userWriteColumnNames = userColumnNames + `, search_grams, username_prefixes`
	userWriteColumns     = userColumns + `, search_grams = ?, username_prefixes = ?`
)

const (
	userInsertCQL   conditionalCQL = `INSERT INTO users (id, ` + userWriteColumnNames + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	userActivateCQL conditionalCQL = `UPDATE users USING TTL 0 SET ` + userWriteColumns + ` WHERE id = ? IF status = 'pending' AND write_id = ?`
	userUpdateCQL   conditionalCQL = `UPDATE users SET ` + userWriteColumns + ` WHERE id = ? IF version = ?`
	userDiscardCQL  conditionalCQL = `DELETE FROM users WHERE id = ? IF status = 'pending'`
	userSelectCQL   readCQL        = `SELECT id, ` + userReadColumnNames + ` FROM users WHERE id = ?`
	// userHoldCQL holds an account's other changes back for its TTL
	// (Hold): one column, no version in its condition, so no change of
	// the account stands in its way; only a visible account's row, so a
	// pending one's never outlives its lease by the hold's cell.
	userHoldCQL conditionalCQL = `UPDATE users USING TTL ? SET moderation_hold = ? WHERE id = ? IF status IN ('active', 'suspended')`
	// userHoldFreeCQL is userHoldCQL only where no hold lives (HoldFree):
	// a recovery's hold never takes an admin's place.
	userHoldFreeCQL conditionalCQL = `UPDATE users USING TTL ? SET moderation_hold = ? WHERE id = ? IF status IN ('active', 'suspended') AND moderation_hold = null`
	// userProfileCQL reads what a stranger sees: five columns of forty-three.
	userProfileCQL readCQL = `SELECT id, username, display_name, status, created_at FROM users WHERE id = ?`
	// userAccessCQL reads what every authenticated request checks: seven.
	userAccessCQL readCQL = `SELECT id, roles, status, suspended_at, suspended_until, password_epoch, password_session FROM users WHERE id = ?`
	// userCredentialsCQL reads what a login checks: the access, the keys,
	// the hash and what else may refuse it; twelve.
	userCredentialsCQL readCQL = `SELECT id, roles, status, suspended_at, suspended_until, password_epoch, password_session, username_key, email_key, password_hash, password_reset_required, email_verified_at FROM users WHERE id = ?`
	// userShownCQL reads what an account's full view shows: ten.
	userShownCQL readCQL = `SELECT id, username, display_name, email, roles, status, created_at, email_verified_at, pending_email, pending_email_at FROM users WHERE id = ?`
	// userClaimedCQL reads what a lookup by username or email shows, and
	// the keys its claim is checked against: twelve.
	userClaimedCQL readCQL = `SELECT id, username, display_name, email, roles, status, created_at, email_verified_at, pending_email, pending_email_at, username_key, email_key FROM users WHERE id = ?`
	// userSignedInCQL reads what a login checks once its session is
	// written, and what its answer shows: fifteen.
	userSignedInCQL readCQL = `SELECT id, username, display_name, email, roles, status, created_at, email_verified_at, pending_email, pending_email_at, suspended_at, suspended_until, password_epoch, password_session, password_reset_required FROM users WHERE id = ?`
	// userStandingCQL reads what moderation shows: the status and the
	// suspension; eight.
	userStandingCQL readCQL = `SELECT id, username, status, suspended_at, suspension_bucket, suspension_reason, suspended_by, suspended_until, suspended_username FROM users WHERE id = ?`
)

// The rows of the narrow reads: each is the columns its statement lists,
// and converts to a view of the domain that no write takes (see
// domain.Access), never to a domain.User.

// profileRow is the part of a users row a stranger sees.
type profileRow struct {
	ID          string    `db:"id"`
	Username    string    `db:"username"`
	DisplayName string    `db:"display_name"`
	Status      string    `db:"status"`
	CreatedAt   time.Time `db:"created_at"`
}

// columns are userProfileCQL's.
func (r *profileRow) columns() []any {
	return []any{&r.ID, &r.Username, &r.DisplayName, &r.Status, &r.CreatedAt}
}

// accessRow is the part of a users row every authenticated request reads.
type accessRow struct {
	ID              string    `db:"id"`
	Roles           []string  `db:"roles"`
	Status          string    `db:"status"`
	SuspendedAt     time.Time `db:"suspended_at"`
	SuspendedUntil  time.Time `db:"suspended_until"`
	PasswordEpoch   int       `db:"password_epoch"`
	PasswordSession string    `db:"password_session"`
}

// columns are userAccessCQL's.
func (r *accessRow) columns() []any {
	return []any{&r.ID, &r.Roles, &r.Status, &r.SuspendedAt, &r.SuspendedUntil, &r.PasswordEpoch, &r.PasswordSession}
}

func (r accessRow) toDomain() domain.Access {
	a := domain.Access{ID: r.ID, Roles: r.Roles, Status: domain.Status(r.Status), PasswordEpoch: r.PasswordEpoch, PasswordSession: r.PasswordSession}
	if !r.SuspendedAt.IsZero() {
		a.Suspension = &domain.Suspension{SuspendedAt: r.SuspendedAt.UTC(), Until: utcOrZero(r.SuspendedUntil)}
	}
	return a
}

// credentialsRow is the part of a users row a login reads.
type credentialsRow struct {
	accessRow
	UsernameKey           string    `db:"username_key"`
	EmailKey              string    `db:"email_key"`
	PasswordHash          string    `db:"password_hash"`
	PasswordResetRequired bool      `db:"password_reset_required"`
	EmailVerifiedAt       time.Time `db:"email_verified_at"`
}

// columns are userCredentialsCQL's.
func (r *credentialsRow) columns() []any {
	return append(r.accessRow.columns(), &r.UsernameKey, &r.EmailKey, &r.PasswordHash, &r.PasswordResetRequired, &r.EmailVerifiedAt)
}

func (r credentialsRow) toDomain() domain.Credentials {
	return domain.Credentials{Access: r.accessRow.toDomain(), UsernameKey: r.UsernameKey, EmailKey: r.EmailKey, PasswordHash: r.PasswordHash,
		PasswordResetRequired: r.PasswordResetRequired, EmailVerifiedAt: utcOrZero(r.EmailVerifiedAt)}
}

// shownRow is the part of a users row an account's full view shows.
type shownRow struct {
	ID              string    `db:"id"`
	Username        string    `db:"username"`
	DisplayName     string    `db:"display_name"`
	Email           string    `db:"email"`
	Roles           []string  `db:"roles"`
	Status          string    `db:"status"`
	CreatedAt       time.Time `db:"created_at"`
	EmailVerifiedAt time.Time `db:"email_verified_at"`
	PendingEmail    string    `db:"pending_email"`
	PendingEmailAt  time.Time `db:"pending_email_at"`
}

// columns are userShownCQL's.
func (r *shownRow) columns() []any {
	return []any{&r.ID, &r.Username, &r.DisplayName, &r.Email, &r.Roles, &r.Status, &r.CreatedAt, &r.EmailVerifiedAt,
		&r.PendingEmail, &r.PendingEmailAt}
}

func (r shownRow) toDomain() domain.Shown {
	return domain.Shown{ID: r.ID, Username: r.Username, DisplayName: r.DisplayName, Email: r.Email, Roles: r.Roles,
		Status: domain.Status(r.Status), CreatedAt: r.CreatedAt, EmailVerifiedAt: utcOrZero(r.EmailVerifiedAt),
		PendingEmail: r.PendingEmail, PendingEmailAt: utcOrZero(r.PendingEmailAt)}
}

// claimedRow is the part of a users row a lookup by username or email
// reads: the full view and the keys.
type claimedRow struct {
	shownRow
	UsernameKey string `db:"username_key"`
	EmailKey    string `db:"email_key"`
}

// columns are userClaimedCQL's.
func (r *claimedRow) columns() []any {
	return append(r.shownRow.columns(), &r.UsernameKey, &r.EmailKey)
}

func (r claimedRow) toDomain() domain.Claimed {
	return domain.Claimed{Shown: r.shownRow.toDomain(), UsernameKey: r.UsernameKey, EmailKey: r.EmailKey}
}

// signedInRow is the part of a users row a login reads after its session
// is written: the full view and what of the access it does not hold.
type signedInRow struct {
	shownRow
	SuspendedAt           time.Time `db:"suspended_at"`
	SuspendedUntil        time.Time `db:"suspended_until"`
	PasswordEpoch         int       `db:"password_epoch"`
	PasswordSession       string    `db:"password_session"`
	PasswordResetRequired bool      `db:"password_reset_required"`
}

// columns are userSignedInCQL's.
func (r *signedInRow) columns() []any {
	return append(r.shownRow.columns(), &r.SuspendedAt, &r.SuspendedUntil, &r.PasswordEpoch, &r.PasswordSession, &r.PasswordResetRequired)
}

func (r signedInRow) toDomain() domain.SignedIn {
	access := accessRow{ID: r.ID, Roles: r.Roles, Status: r.Status, SuspendedAt: r.SuspendedAt, SuspendedUntil: r.SuspendedUntil,
		PasswordEpoch: r.PasswordEpoch, PasswordSession: r.PasswordSession}
	return domain.SignedIn{Access: access.toDomain(), PasswordResetRequired: r.PasswordResetRequired, Shown: r.shownRow.toDomain()}
}

// standingRow is the part of a users row moderation shows.
type standingRow struct {
	ID               string    `db:"id"`
	Username         string    `db:"username"`
	Status           string    `db:"status"`
	SuspendedAt      time.Time `db:"suspended_at"`
	SuspensionBucket string    `db:"suspension_bucket"`
	SuspensionReason string    `db:"suspension_reason"`
	SuspendedBy      string    `db:"suspended_by"`
	SuspendedUntil   time.Time `db:"suspended_until"`
	// SuspendedUsername is userRow's.
	SuspendedUsername string `db:"suspended_username"`
}

// columns are userStandingCQL's.
func (r *standingRow) columns() []any {
	return []any{&r.ID, &r.Username, &r.Status, &r.SuspendedAt, &r.SuspensionBucket, &r.SuspensionReason, &r.SuspendedBy, &r.SuspendedUntil, &r.SuspendedUsername}
}

// toDomain builds the suspension as userRow.toDomain does.
func (r standingRow) toDomain() domain.Standing {
	s := domain.Standing{ID: r.ID, Username: r.Username, Status: domain.Status(r.Status)}
	if !r.SuspendedAt.IsZero() {
		s.Suspension = &domain.Suspension{UserID: r.ID, Username: suspendedAs(r.SuspendedUsername, r.Username), Reason: r.SuspensionReason,
			SuspendedAt: r.SuspendedAt.UTC(), SuspendedBy: r.SuspendedBy, Until: utcOrZero(r.SuspendedUntil), Bucket: r.SuspensionBucket}
	}
	return s
}

// values lists r's columns in userColumns order, with the tag of this
// write; absent is what an empty optional column is written as (see orAbsent).
func (r userRow) values(writeID string, absent any) []any {
	return []any{r.Username, r.UsernameKey, r.Email, r.EmailKey, r.DisplayName, r.PasswordHash, r.Roles,
		r.Status, r.CreatedAt, r.UpdatedAt, r.Version, writeID,
		orAbsent(r.SuspendedAt, absent), orAbsent(r.SuspensionBucket, absent), orAbsent(r.SuspensionReason, absent),
		orAbsent(r.SuspendedBy, absent), orAbsent(r.SuspendedUntil, absent),
		orAbsent(r.LiftKind, absent), orAbsent(r.LiftedAt, absent), orAbsent(r.LiftedBy, absent), orAbsent(r.LiftedSuspendedAt, absent),
		orAbsent(r.LiftedSuspendedBy, absent), orAbsent(r.LiftedReason, absent), orAbsent(r.LiftedUntil, absent),
		orAbsent(r.DeletedAt, absent), orAbsent(r.DeletedBy, absent), orAbsent(r.DeletionAttempt, absent),
		orAbsent(r.EmailVerifiedAt, absent), r.PasswordEpoch, orAbsent(r.PasswordSession, absent), orAbsent(r.AdminChange, absent),
		orAbsent(r.PendingEmail, absent), orAbsent(r.PendingEmailKey, absent), orAbsent(r.PendingEmailAt, absent),
		orAbsent(r.RecoveryEmail, absent), orAbsent(r.RecoveryEmailKey, absent), orAbsent(r.RecoveryUntil, absent),
		orAbsent(r.PasswordResetRequired, absent), orAbsent(r.PendingEmailSession, absent), orAbsent(r.RecoveryEpoch, absent),
		orAbsent(r.AddressEpoch, absent), orAbsent(r.HeldUsername, absent), orAbsent(r.HeldUsernameKey, absent), orAbsent(r.HeldUsernameUntil, absent),
		orAbsent(r.SuspendedUsername, absent),
		gramsOrAbsent(r.RefusedEmailKeys, absent),
		gramsOrAbsent(domain.SearchGrams(r.UsernameKey, r.EmailKey), absent),
		gramsOrAbsent(domain.UsernamePrefixes(r.UsernameKey), absent)}
}

// gramsOrAbsent passes a row's set (its search grams, prefixes or refused
// keys), or absent when it has none (a deleted account, whose keys are
// cleared: nil deletes the set).
func gramsOrAbsent(grams []string, absent any) any {
	if len(grams) == 0 {
		return absent
	}
	return grams
}

// Create inserts a pending account that expires after lease.
func (s *Users) Create(ctx context.Context, u domain.User, lease time.Duration) (string, error) {
	r := fromDomainUser(u)
	return s.rows.create(ctx, userInsertCQL, u.ID, func(writeID string) []any {
		return append(append([]any{r.ID}, r.values(writeID, gocql.UnsetValue)...), ttlSeconds(lease))
	})
}

// Activate rewrites every column without TTL if the account is still
// pending as the create attempt tagged tag wrote it.
func (s *Users) Activate(ctx context.Context, u domain.User, tag string) (bool, error) {
	r, writeID := fromDomainUser(u), newWriteID()
	return s.rows.write(ctx, "activate", userActivateCQL, u.ID, writeID, 0, append(r.values(writeID, gocql.UnsetValue), r.ID, tag)...)
}

// Update writes u if the stored version is u.Version-1.
func (s *Users) Update(ctx context.Context, u domain.User) (bool, error) {
	r, writeID := fromDomainUser(u), newWriteID()
	return s.rows.write(ctx, "update", userUpdateCQL, u.ID, writeID, u.Version, append(r.values(writeID, nil), r.ID, u.Version-1)...)
}

// Hold holds the account's other changes back for d (in whole seconds,
// at least one) under attempt tag: while the hold lives, GetSerial reads the
// account as ModerationHeld. False: the account is not visible. Writing
// it again is harmless (the same tag, its TTL from then); a lost answer
// is settled by reading the cell back at SERIAL.
func (s *Users) Hold(ctx context.Context, id, tag string, d time.Duration) (bool, error) {
	return s.hold(ctx, "users.hold", userHoldCQL, id, tag, d)
}

// HoldFree is Hold only where no hold lives: a recovery's, which never
// takes the place of an admin's hold (domain.User.RecoveryHeld). A lost
// answer is settled as Hold's: another tag in the cell leaves ours
// unknown (it may still be queued).
func (s *Users) HoldFree(ctx context.Context, id, tag string, d time.Duration) (bool, error) {
	return s.hold(ctx, "users.hold_free", userHoldFreeCQL, id, tag, d)
}

// hold writes tag in the account's hold cell for d by stmt (Hold,
// HoldFree).
func (s *Users) hold(ctx context.Context, name string, stmt conditionalCQL, id, tag string, d time.Duration) (bool, error) {
	t := s.rows
	return t.db.exec(ctx, lwt{
		name: name,
		run: func(ctx context.Context) (bool, error) {
			return t.db.cas(ctx, nil, stmt, ttlSeconds(d), tag, id)
		},
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := t.get(ctx, id, t.db.Serial)
			switch {
			case err != nil:
				return false, false, err
			case found && r.ModerationHold == tag:
				return true, false, nil
			case !found || (r.Status != string(domain.StatusActive) && r.Status != string(domain.StatusSuspended)):
				return false, false, nil
			}
			return false, true, nil
		},
	})
}

// Discard deletes an account that is still pending.
func (s *Users) Discard(ctx context.Context, id string) error {
	return s.rows.discardPending(ctx, userDiscardCQL, id)
}

// Get reads an account.
func (s *Users) Get(ctx context.Context, id string) (domain.User, error) {
	r, err := s.rows.read(ctx, id, false)
	return r.toDomain(), err
}

// Profile reads the public part of an account (userProfileCQL).
func (s *Users) Profile(ctx context.Context, id string) (domain.Profile, error) {
	return readView(ctx, s, "users.profile", userProfileCQL, id, func(r profileRow) domain.Profile {
		return domain.Profile{ID: r.ID, Username: r.Username, DisplayName: r.DisplayName, Status: domain.Status(r.Status), CreatedAt: r.CreatedAt}
	})
}

// NodeNow reads the answering node's clock.
func (s *Users) NodeNow(ctx context.Context) (time.Time, error) { return s.rows.db.nodeNow(ctx) }

// Access reads what an authenticated request checks (userAccessCQL).
func (s *Users) Access(ctx context.Context, id string) (domain.Access, error) {
	return readView(ctx, s, "users.access", userAccessCQL, id, accessRow.toDomain)
}

// Credentials reads what a login checks (userCredentialsCQL).
func (s *Users) Credentials(ctx context.Context, id string) (domain.Credentials, error) {
	return readView(ctx, s, "users.credentials", userCredentialsCQL, id, credentialsRow.toDomain)
}

// Shown reads what an account's full view shows (userShownCQL).
func (s *Users) Shown(ctx context.Context, id string) (domain.Shown, error) {
	return readView(ctx, s, "users.shown", userShownCQL, id, shownRow.toDomain)
}

// Claimed reads what a lookup by username or email shows, with the keys
// (userClaimedCQL).
func (s *Users) Claimed(ctx context.Context, id string) (domain.Claimed, error) {
	return readView(ctx, s, "users.claimed", userClaimedCQL, id, claimedRow.toDomain)
}

// SignedIn reads what a login checks once its session is written
// (userSignedInCQL).
func (s *Users) SignedIn(ctx context.Context, id string) (domain.SignedIn, error) {
	return readView(ctx, s, "users.signed_in", userSignedInCQL, id, signedInRow.toDomain)
}

// Standing reads what moderation shows of an account (userStandingCQL).
func (s *Users) Standing(ctx context.Context, id string) (domain.Standing, error) {
	return readView(ctx, s, "users.standing", userStandingCQL, id, standingRow.toDomain)
}

// readView reads the columns stmt lists of account id, at the session's
// consistency, into its row R, and converts them with view; op names the
// read in errors.
func readView[R any, P scanned[R], V any](ctx context.Context, s *Users, op string, stmt readCQL, id string, view func(R) V) (V, error) {
	r, found, err := getRow[R, P](s.rows.db.query(ctx, 0, stmt, id))
	var zero V
	switch {
	case err != nil:
		return zero, dbErr(op, err)
	case !found:
		return zero, domain.ErrNotFound
	}
	return view(r), nil
}

// GetSerial reads an account at SERIAL.
func (s *Users) GetSerial(ctx context.Context, id string) (domain.User, error) {
	r, err := s.rows.read(ctx, id, true)
	return r.toDomain(), err
}
