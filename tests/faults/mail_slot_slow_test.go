package faults

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestASlowTakeLeavesTheMailItsTime: ann follows the revert link of the
// thief's email change, whose reset link is mailed inside the request.
// The take of its slot answers just as the request's deadline passes (a
// loaded node): the slot is held for the hour, and the token's write and
// the mail, on the request's context, were never sent, so the owner's
// way back was spent with nothing in her mailbox. Once a mail holds its
// slot it has time of its own.
func TestASlowTakeLeavesTheMailItsTime(t *testing.T) {
	t.Parallel()
	m := emailChangeWorld(t, false)
	slow := &slowTake{}
	m.rewire(func(st *memstore.Store, c *accounts.Config) {
		slow.Attempts = st.Attempts()
		c.Throttle = accounts.Throttle{Store: slow}
		c.Mail = accounts.Mail{Tokens: sentTokens{st.Tokens()}, Mailer: m.box, PublicURL: "https://shelf.example.org",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour, PerAddress: 5}
	})
	thiefTakes(t, m)
	before := m.box.sentTo("reset", annHome)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	slow.armed.Store(true)
	_ = m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annHome))
	if got := m.box.sentTo("reset", annHome); got != before+1 {
		t.Fatalf("%d reset links reached the owner's mailbox, want 1: its slot was taken as the request's deadline passed, and nothing was sent", got-before)
	}
}

// slowTake is the memory store's attempts whose take, once armed,
// answers only after its caller's context has ended (it applies all the
// same).
type slowTake struct {
	*memstore.Attempts
	armed atomic.Bool
}

func (s *slowTake) Take(ctx context.Context, scope string, n int, a accounts.Attempt, ttl time.Duration) (bool, error) {
	ok, err := s.Attempts.Take(ctx, scope, n, a, ttl)
	if s.armed.Load() {
		<-ctx.Done()
	}
	return ok, err
}

// sentTokens is the memory store's tokens as a driver sends them: a
// write whose context has ended is never sent.
type sentTokens struct{ accounts.TokenStore }

func (s sentTokens) Create(ctx context.Context, tok accounts.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.TokenStore.Create(ctx, tok)
}
