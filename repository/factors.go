package repository

import (
	"context"
	"fmt"
	"time"

	"shelf/domain/accounts"
)

// Factors keeps second factors and recovery sets (account_factors,
// migration 026): one partition per account, every write a lightweight
// transaction tagged with a write id (a code's use: the use's id), so an
// ambiguous answer is settled by a SERIAL read of its row (DB.exec).
type Factors struct {
	db *DB
}

var _ accounts.FactorStore = (*Factors)(nil)

// NewFactors returns the factor store.
func NewFactors(db *DB) *Factors { return &Factors{db: db} }

// recoveryRow is the factor id of the account's recovery set.
const recoveryRow = "recovery"

// factorRow is a row of account_factors.
type factorRow struct {
	UserID      string            `db:"user_id"`
	FactorID    string            `db:"factor_id"`
	Kind        string            `db:"kind"`
	Name        string            `db:"name"`
	Sealed      string            `db:"sealed"`
	CreatedAt   time.Time         `db:"created_at"`
	ConfirmedAt time.Time         `db:"confirmed_at"`
	LastStep    int64             `db:"last_step"`
	LastUsedAt  time.Time         `db:"last_used_at"`
	Generation  string            `db:"generation"`
	Codes       []string          `db:"codes"`
	Used        map[string]string `db:"used"`
	WriteID     string            `db:"write_id"`
	// PasswordOnly is true on a pending factor proven by the password
	// alone, false on one proven by a factor, null (false) on rows begun
	// before 046.
	PasswordOnly bool `db:"password_only"`
}

// columns are factorSelectCQL's and factorRowCQL's.
func (r *factorRow) columns() []any {
	return []any{&r.UserID, &r.FactorID, &r.Kind, &r.Name, &r.Sealed, &r.CreatedAt, &r.ConfirmedAt, &r.LastStep,
		&r.LastUsedAt, &r.Generation, &r.Codes, &r.Used, &r.WriteID, &r.PasswordOnly}
}

const (
	factorSelectCQL readCQL = `SELECT user_id, factor_id, kind, name, sealed, created_at, confirmed_at, last_step, last_used_at, generation, codes, used, write_id, password_only FROM account_factors WHERE user_id = ?`
	factorRowCQL    readCQL = `SELECT user_id, factor_id, kind, name, sealed, created_at, confirmed_at, last_step, last_used_at, generation, codes, used, write_id, password_only FROM account_factors WHERE user_id = ? AND factor_id = ?`

	factorBeginCQL conditionalCQL = `INSERT INTO account_factors (user_id, factor_id, kind, name, sealed, created_at, write_id, password_only) VALUES (?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	// factorConfirmCQL writes every column without a TTL (but
	// password_only, which only a pending row needs): the pending row's
	// cells expire, these do not. A row gone has no sealed value,
	// so the condition fails rather than creating one.
	factorConfirmCQL conditionalCQL = `UPDATE account_factors USING TTL 0 SET kind = ?, name = ?, sealed = ?, created_at = ?, confirmed_at = ?, last_step = ?, last_used_at = ?, write_id = ? WHERE user_id = ? AND factor_id = ? IF sealed = ? AND confirmed_at = null`
	// factorStepCQL: a pending row's last_step is null, and so is a gone
	// row's; null < ? does not hold.
	factorStepCQL conditionalCQL = `UPDATE account_factors SET last_step = ?, last_used_at = ?, write_id = ? WHERE user_id = ? AND factor_id = ? IF last_step < ?`
	// factorTouchCQL: a gone row has no sealed value, and a pending one
	// (written anew by a late insert) no confirmed_at: neither is touched,
	// nor brought back (a pending row's cells expire with its TTL, and a
	// touch's would outlive it).
	factorTouchCQL  conditionalCQL = `UPDATE account_factors SET last_used_at = ?, write_id = ? WHERE user_id = ? AND factor_id = ? IF sealed = ? AND confirmed_at != null`
	factorRemoveCQL conditionalCQL = `DELETE FROM account_factors WHERE user_id = ? AND factor_id = ? IF EXISTS`
	// factorRemovePendingCQL: a confirmation sets confirmed_at, so one
	// landing first keeps its factor; one landing after finds no sealed
	// value, and confirms nothing.
	factorRemovePendingCQL conditionalCQL = `DELETE FROM account_factors WHERE user_id = ? AND factor_id = ? IF confirmed_at = null`

	recoveryCreateCQL  conditionalCQL = `INSERT INTO account_factors (user_id, factor_id, kind, generation, codes, created_at, write_id) VALUES (?, ?, 'recovery', ?, ?, ?, ?) IF NOT EXISTS`
	recoveryReplaceCQL conditionalCQL = `UPDATE account_factors SET generation = ?, codes = ?, used = null, created_at = ?, write_id = ? WHERE user_id = ? AND factor_id = ? IF generation = ?`
	recoveryUseCQL     conditionalCQL = `UPDATE account_factors SET used[?] = ? WHERE user_id = ? AND factor_id = ? IF generation = ? AND used[?] = null`
	recoveryRemoveCQL  conditionalCQL = `DELETE FROM account_factors WHERE user_id = ? AND factor_id = ? IF generation = ?`
)

// Read reads the account's partition: its factors, by id (a time-ordered
// id: by creation), and its recovery set.
func (s *Factors) Read(ctx context.Context, userID string) ([]accounts.Factor, accounts.RecoverySet, error) {
	rows, err := selectRows[factorRow](s.db.query(ctx, 0, factorSelectCQL, userID))
	if err != nil {
		return nil, accounts.RecoverySet{}, dbErr("account_factors.read", err)
	}
	var factors []accounts.Factor
	set := accounts.RecoverySet{UserID: userID}
	for _, r := range rows {
		if r.FactorID == recoveryRow {
			set = r.toSet()
			continue
		}
		if r.Sealed == "" {
			continue // a use landed on a row gone: no factor
		}
		factors = append(factors, r.toFactor())
	}
	return factors, set, nil
}

func (r factorRow) toFactor() accounts.Factor {
	return accounts.Factor{UserID: r.UserID, ID: r.FactorID, Kind: accounts.FactorKind(r.Kind), Name: r.Name, Sealed: r.Sealed,
		CreatedAt: utcOrZero(r.CreatedAt), ConfirmedAt: utcOrZero(r.ConfirmedAt), LastStep: r.LastStep, LastUsedAt: utcOrZero(r.LastUsedAt),
		PasswordOnly: r.PasswordOnly}
}

func (r factorRow) toSet() accounts.RecoverySet {
	used := r.Used
	if used == nil {
		used = map[string]string{}
	}
	return accounts.RecoverySet{UserID: r.UserID, Generation: r.Generation, Codes: r.Codes, Used: used, CreatedAt: utcOrZero(r.CreatedAt)}
}

// Begin inserts a pending factor IF NOT EXISTS (its id is random: exists
// is an error, not an outcome), living for ttl.
func (s *Factors) Begin(ctx context.Context, f accounts.Factor, ttl time.Duration) error {
	writeID := newWriteID()
	ok, err := s.exec(ctx, "begin", f.UserID, f.ID, func(r factorRow) bool { return r.WriteID == writeID },
		factorBeginCQL, f.UserID, f.ID, string(f.Kind), f.Name, f.Sealed, f.CreatedAt, writeID, f.PasswordOnly, ttlSeconds(ttl))
	if err == nil && !ok {
		return fmt.Errorf("account_factors.begin: %s/%s exists", f.UserID, f.ID)
	}
	return err
}

// Confirm rewrites the pending factor whole, without a TTL, with
// f.Sealed, if it is still pending with pending.
func (s *Factors) Confirm(ctx context.Context, f accounts.Factor, pending string) (bool, error) {
	writeID := newWriteID()
	return s.exec(ctx, "confirm", f.UserID, f.ID, func(r factorRow) bool { return r.WriteID == writeID },
		factorConfirmCQL, string(f.Kind), f.Name, f.Sealed, f.CreatedAt, f.ConfirmedAt, f.LastStep, f.LastUsedAt, writeID,
		f.UserID, f.ID, pending)
}

// UseStep moves the factor's last step on to step if it is earlier.
func (s *Factors) UseStep(ctx context.Context, f accounts.Factor, step int64, at time.Time) (bool, error) {
	writeID := newWriteID()
	return s.exec(ctx, "use_step", f.UserID, f.ID, func(r factorRow) bool { return r.WriteID == writeID },
		factorStepCQL, step, at, writeID, f.UserID, f.ID, step)
}

// Touch records a use of f at at IF its sealed value stands. A lost
// answer is settled by the row: found with f's sealed value and
// confirmed, the factor stood (a use racing this one may have tagged it
// since); found otherwise, or gone, it did not.
func (s *Factors) Touch(ctx context.Context, f accounts.Factor, at time.Time) (bool, error) {
	return s.exec(ctx, "touch", f.UserID, f.ID, func(r factorRow) bool { return r.Sealed == f.Sealed && !r.ConfirmedAt.IsZero() },
		factorTouchCQL, at, newWriteID(), f.UserID, f.ID, f.Sealed)
}

// Remove deletes a factor IF EXISTS. A row found gone at SERIAL after a
// lost answer is removed either way: reported removed.
func (s *Factors) Remove(ctx context.Context, userID, id string) (bool, error) {
	return s.exec(ctx, "remove", userID, id, nil, factorRemoveCQL, userID, id)
}

// RemovePending deletes an enrolment IF it is not confirmed. A row found
// gone at SERIAL after a lost answer is removed either way; a row found
// is tried again, and the condition decides.
func (s *Factors) RemovePending(ctx context.Context, userID, id string) (bool, error) {
	return s.exec(ctx, "remove_pending", userID, id, nil, factorRemovePendingCQL, userID, id)
}

// SetRecovery writes set in place of generation prev: created when prev
// is "", replaced otherwise.
func (s *Factors) SetRecovery(ctx context.Context, set accounts.RecoverySet, prev string) (bool, error) {
	writeID := newWriteID()
	ours := func(r factorRow) bool { return r.WriteID == writeID }
	if prev == "" {
		return s.exec(ctx, "recovery_create", set.UserID, recoveryRow, ours,
			recoveryCreateCQL, set.UserID, recoveryRow, set.Generation, set.Codes, set.CreatedAt, writeID)
	}
	return s.exec(ctx, "recovery_replace", set.UserID, recoveryRow, ours,
		recoveryReplaceCQL, set.Generation, set.Codes, set.CreatedAt, writeID, set.UserID, recoveryRow, prev)
}

// UseRecovery marks one code of set used by useID.
func (s *Factors) UseRecovery(ctx context.Context, set accounts.RecoverySet, hash, useID string) (bool, error) {
	return s.exec(ctx, "recovery_use", set.UserID, recoveryRow, func(r factorRow) bool { return r.Used[hash] == useID },
		recoveryUseCQL, hash, useID, set.UserID, recoveryRow, set.Generation, hash)
}

// RemoveRecovery deletes the set if it is still generation gen.
func (s *Factors) RemoveRecovery(ctx context.Context, userID, gen string) error {
	_, err := s.exec(ctx, "recovery_remove", userID, recoveryRow, nil, recoveryRemoveCQL, userID, recoveryRow, gen)
	return err
}

// exec runs one conditional statement on a row; ours says whether the
// row read back at SERIAL holds this write (nil: the write is a delete,
// which a row found gone proves). Otherwise the statement runs again,
// and its condition decides again.
func (s *Factors) exec(ctx context.Context, op, userID, id string, ours func(factorRow) bool, stmt conditionalCQL, args ...any) (bool, error) {
	return s.db.exec(ctx, lwt{
		name: "account_factors." + op,
		run:  func(ctx context.Context) (bool, error) { return s.db.cas(ctx, nil, stmt, args...) },
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := getRow[factorRow](s.db.query(ctx, s.db.Serial, factorRowCQL, userID, id))
			switch {
			case err != nil:
				return false, false, err
			case ours == nil && !found:
				return true, false, nil
			case ours != nil && found && ours(r):
				return true, false, nil
			}
			return false, true, nil
		},
	})
}
