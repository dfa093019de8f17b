package repository

import (
	"context"
	"fmt"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Tokens keeps the single-use tokens (account_tokens, migrations 012 and
// 027): those mailed for email verification, password reset and the
// reverts of an email change or a new factor, and the unmailed challenges
// of a login's second factor and of a passkey proof. The rows are
// LWT-managed: created IF NOT EXISTS, used IF purpose = ? AND used_at =
// null, finished IF use_id = ?; every write tagged, so an ambiguous answer
// is settled by a SERIAL read (DB.exec).
type Tokens struct {
	db *DB
}

var _ accounts.TokenStore = (*Tokens)(nil)

// NewTokens returns the token store.
func NewTokens(db *DB) *Tokens { return &Tokens{db: db} }

// tokenRow is a row of account_tokens.
type tokenRow struct {
	TokenHash     string    `db:"token_hash"`
	Purpose       string    `db:"purpose"`
	UserID        string    `db:"user_id"`
	Email         string    `db:"email"`
	EmailKey      string    `db:"email_key"`
	PasswordPrint string    `db:"password_print"`
	CreatedAt     time.Time `db:"created_at"`
	ExpiresAt     time.Time `db:"expires_at"`
	WriteID       string    `db:"write_id"`
	UsedAt        time.Time `db:"used_at"`
	UseID         string    `db:"use_id"`
	NewPassword   string    `db:"new_password"`
	UsedRecovery  string    `db:"used_recovery"`
	DoneAt        time.Time `db:"done_at"`
	Subject       string    `db:"subject"`
}

// columns are tokenSelectCQL's.
func (r *tokenRow) columns() []any {
	return []any{&r.TokenHash, &r.Purpose, &r.UserID, &r.Email, &r.EmailKey, &r.PasswordPrint, &r.CreatedAt,
		&r.ExpiresAt, &r.WriteID, &r.UsedAt, &r.UseID, &r.NewPassword, &r.UsedRecovery, &r.DoneAt, &r.Subject}
}

func (r tokenRow) toDomain() accounts.Token {
	return accounts.Token{Hash: r.TokenHash, Purpose: accounts.TokenPurpose(r.Purpose), UserID: r.UserID,
		Email: r.Email, EmailKey: r.EmailKey, PasswordPrint: r.PasswordPrint, CreatedAt: utcOrZero(r.CreatedAt),
		ExpiresAt: utcOrZero(r.ExpiresAt), UsedAt: utcOrZero(r.UsedAt), UseID: r.UseID, NewPassword: r.NewPassword,
		UsedRecovery: r.UsedRecovery, DoneAt: utcOrZero(r.DoneAt), Subject: r.Subject}
}

const (
	tokenInsertCQL conditionalCQL = `INSERT INTO account_tokens (token_hash, purpose, user_id, email, email_key, password_print, created_at, expires_at, write_id, subject) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	tokenSelectCQL readCQL        = `SELECT token_hash, purpose, user_id, email, email_key, password_print, created_at, expires_at, write_id, used_at, use_id, new_password, used_recovery, done_at, subject FROM account_tokens WHERE token_hash = ?`
	// tokenUseCQL: a row that is gone has no purpose, so the condition
	// fails rather than creating a row of used_at alone.
	tokenUseCQL  conditionalCQL = `UPDATE account_tokens USING TTL ? SET used_at = ?, use_id = ?, new_password = ?, used_recovery = ? WHERE token_hash = ? IF purpose = ? AND used_at = null`
	tokenDoneCQL conditionalCQL = `UPDATE account_tokens USING TTL ? SET done_at = ? WHERE token_hash = ? IF use_id = ?`
)

// ttlOf is the TTL of a token's cells written now: until its expiry plus
// the grace in which an interrupted use is finished (at least a second).
func (s *Tokens) ttlOf(t accounts.Token) int {
	return ttlSeconds(t.ExpiresAt.Add(accounts.TokenGrace).Sub(s.db.Now()))
}

// Create inserts a token IF NOT EXISTS (hashes of 256 random bits: exists
// is an error, not an outcome), tagged with a write id.
func (s *Tokens) Create(ctx context.Context, t accounts.Token) error {
	writeID := newWriteID()
	ok, err := s.exec(ctx, "create", t.Hash, func(r tokenRow) bool { return r.WriteID == writeID },
		tokenInsertCQL, t.Hash, string(t.Purpose), t.UserID, t.Email, t.EmailKey, orUnset(t.PasswordPrint),
		t.CreatedAt, t.ExpiresAt, writeID, orUnset(t.Subject), s.ttlOf(t))
	if err == nil && !ok {
		return fmt.Errorf("account_tokens.create: %s exists", t.Hash)
	}
	return err
}

// Get reads a token at SERIAL: the latest use wins over a read of the
// token as it was mailed.
func (s *Tokens) Get(ctx context.Context, hash string) (accounts.Token, error) {
	r, found, err := getRow[tokenRow](s.db.query(ctx, s.db.Serial, tokenSelectCQL, hash))
	if err != nil {
		return accounts.Token{}, dbErr("account_tokens.get", err)
	}
	if !found || r.Purpose == "" {
		return accounts.Token{}, domain.ErrNotFound
	}
	return r.toDomain(), nil
}

// Use marks t used with its UseID (the tag) if it is unused and of its
// purpose.
func (s *Tokens) Use(ctx context.Context, t accounts.Token) (bool, error) {
	return s.exec(ctx, "use", t.Hash, func(r tokenRow) bool { return r.UseID == t.UseID },
		tokenUseCQL, s.ttlOf(t), t.UsedAt, t.UseID, orUnset(t.NewPassword), orUnset(t.UsedRecovery), t.Hash, string(t.Purpose))
}

// Done marks a used token done if it still carries t's use. Marking done
// twice is the same state, so any done_at proves it.
func (s *Tokens) Done(ctx context.Context, t accounts.Token, at time.Time) (bool, error) {
	return s.exec(ctx, "done", t.Hash, func(r tokenRow) bool { return !r.DoneAt.IsZero() },
		tokenDoneCQL, s.ttlOf(t), at, t.Hash, t.UseID)
}

// exec runs one conditional statement on the token hash's row; ours says
// whether the row read back at SERIAL holds this write. A row without it
// runs the statement again, whose condition decides again.
func (s *Tokens) exec(ctx context.Context, op, hash string, ours func(tokenRow) bool, stmt conditionalCQL, args ...any) (bool, error) {
	return s.db.exec(ctx, lwt{
		name: "account_tokens." + op,
		run:  func(ctx context.Context) (bool, error) { return s.db.cas(ctx, nil, stmt, args...) },
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := getRow[tokenRow](s.db.query(ctx, s.db.Serial, tokenSelectCQL, hash))
			switch {
			case err != nil:
				return false, false, err
			case found && ours(r):
				return true, false, nil
			}
			return false, true, nil
		},
	})
}
