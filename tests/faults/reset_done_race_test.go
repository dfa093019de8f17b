package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// beforeUse is a token store whose next use first runs before: what
// another request does while this one waits to use a token it read
// unused.
type beforeUse struct {
	accounts.TokenStore
	before func()
}

func (s *beforeUse) Use(ctx context.Context, t accounts.Token) (bool, error) {
	if f := s.before; f != nil {
		s.before = nil
		f()
	}
	return s.TokenStore.Use(ctx, t)
}

// TestAResetFinishedWhileAnotherWaitedOpensNoSecondSession: two
// requests with ann's reset link and the same new password (a double
// submit, or whoever saw the link and the password typed); the second
// reads the token unused, then the first uses it, sets the password,
// opens its session and marks the token done. The second's use fails and
// its read finds the token done: it is refused as used, as a request that
// read it done is, and opens no session (before, it went on as the
// first's retry and answered a second session for a finished token).
func TestAResetFinishedWhileAnotherWaitedOpensNoSecondSession(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, true)
	store := &beforeUse{TokenStore: m.store.Tokens()}
	m.rewire(func(_ *memstore.Store, c *accounts.Config) { c.Mail.Tokens = store })
	ctx := context.Background()
	var first accounts.LoginResult
	var firstErr error
	store.before = func() {
		first, firstErr = m.svc.ResetPassword(ctx, m.reset, newPassword, accounts.Client{})
	}
	second, err := m.svc.ResetPassword(ctx, m.reset, newPassword, accounts.Client{})
	if firstErr != nil || first.Token == "" {
		t.Fatalf("the first reset: %v, session %q", firstErr, first.Token)
	}
	if !errors.Is(err, accounts.ErrTokenUsed) {
		t.Errorf("the second reset of a token done meanwhile answered %v, want the token used", err)
	}
	if second.Token != "" || second.Challenge != "" {
		t.Error("a reset link finished by another request opened a second session")
	}
}
