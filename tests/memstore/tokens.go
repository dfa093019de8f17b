package memstore

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Tokens keeps mailed tokens as repository.Tokens does: every write a
// compare-and-set of one row, decided when it lands; a row is gone once its
// expiry and the grace have passed on the store's clock.
type Tokens struct{ s *Store }

var _ accounts.TokenStore = (*Tokens)(nil)

// Tokens is the store as the accounts' token store.
func (s *Store) Tokens() *Tokens { return &Tokens{s} }

// liveToken returns the token's row unless it is gone. The caller holds s.mu.
func (s *Store) liveToken(hash string) (accounts.Token, bool) {
	t, ok := s.tokens[hash]
	if ok && !s.now.Before(t.ExpiresAt.Add(accounts.TokenGrace)) {
		delete(s.tokens, hash)
		return accounts.Token{}, false
	}
	return t, ok
}

// Create inserts a token if none has its hash.
func (t *Tokens) Create(_ context.Context, tok accounts.Token) error {
	applied, err := t.s.call("tokens.create", true, func() (bool, error) {
		if _, ok := t.s.liveToken(tok.Hash); ok {
			return false, nil
		}
		tok.UsedAt, tok.UseID, tok.NewPassword, tok.UsedRecovery, tok.DoneAt = time.Time{}, "", "", "", time.Time{}
		t.s.tokens[tok.Hash] = tok
		return true, nil
	})
	if err == nil && !applied {
		return errors.New("memstore: tokens.create: hash exists")
	}
	return err
}

// Get reads a token.
func (t *Tokens) Get(_ context.Context, hash string) (accounts.Token, error) {
	var out accounts.Token
	found, err := t.s.call("tokens.get", false, func() (bool, error) {
		var ok bool
		out, ok = t.s.liveToken(hash)
		return ok, nil
	})
	if err == nil && !found {
		return accounts.Token{}, domain.ErrNotFound
	}
	return out, err
}

// Use marks the token used if it is unused and of its purpose.
func (t *Tokens) Use(_ context.Context, tok accounts.Token) (bool, error) {
	return t.s.call("tokens.use", true, func() (bool, error) {
		r, ok := t.s.liveToken(tok.Hash)
		if !ok || r.Purpose != tok.Purpose || !r.UsedAt.IsZero() {
			return false, nil
		}
		r.UsedAt, r.UseID, r.NewPassword, r.UsedRecovery = tok.UsedAt, tok.UseID, tok.NewPassword, tok.UsedRecovery
		t.s.tokens[tok.Hash] = r
		return true, nil
	})
}

// Done marks the token done if it carries tok's use.
func (t *Tokens) Done(_ context.Context, tok accounts.Token, at time.Time) (bool, error) {
	return t.s.call("tokens.done", true, func() (bool, error) {
		r, ok := t.s.liveToken(tok.Hash)
		if !ok || r.UseID != tok.UseID {
			return false, nil
		}
		r.DoneAt = at
		t.s.tokens[tok.Hash] = r
		return true, nil
	})
}
