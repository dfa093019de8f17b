package faults

import (
	"context"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAFloodOfVerificationRequestsDoesNotHoldBackTheOwnersReset: ann's
// address is not verified. A stranger asks for its verification link
// hundreds of times in a minute (no session needed, a few addresses):
// all but the last of the hour's mails go, and every other request is
// refused, its try under the address's budget settled refused. A read
// of that budget's tries stops at its bound, oldest first, and refused
// for a minute whenever it was cut: the owner's reset, the one mail the
// verification requests may never take, was held back for as long as
// the stranger kept asking.
func TestAFloodOfVerificationRequestsDoesNotHoldBackTheOwnersReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false) // annHome not verified
	limitMail(m, 3)
	for range 600 {
		if err := m.svc.RequestVerification(ctx, domain.Principal{}, annHome); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	if link := m.box.tokenTo("reset", annHome); link == "" {
		t.Fatalf("no reset link reached the owner's mailbox (%d verification links did): the stranger's refused requests held it back",
			m.box.sentTo("verify", annHome))
	}
}

// TestABurstOfMailRequestsDoesNotHoldBackTheOwnersReset: ann's address
// is not verified. A stranger sends verification requests for it in
// bursts of 50 at once (each burst's requests all look at the address's
// budget before any of them counts), twelve bursts in a minute. When a
// budget was counted by tries read back, every request of a burst wrote
// its try, found the others' in flight and was refused, so no burst
// spent anything and the refused tries piled up: 512 of them cut the
// read, which refused the owner's reset for a minute. Slots taken with
// a compare-and-set leave the last one for the reset.
func TestABurstOfMailRequestsDoesNotHoldBackTheOwnersReset(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, false) // annHome not verified
	burst := &lookTogether{n: 50, armed: true}
	m.rewire(func(st *memstore.Store, c *accounts.Config) {
		burst.AttemptStore = st.Attempts()
		c.Throttle = accounts.Throttle{Store: burst}
		c.Mail = accounts.Mail{Tokens: st.Tokens(), Mailer: m.box, PublicURL: "https://shelf.example.org",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour, PerAddress: 3}
	})
	before := m.box.sentTo("verify", annHome) // the signup's, before the limit
	for range 12 {
		done := make(chan error, burst.n)
		for range burst.n {
			go func() {
				ctx := context.WithValue(context.Background(), inBurst{}, true)
				done <- m.svc.RequestVerification(ctx, domain.Principal{}, annHome)
			}()
		}
		for range burst.n {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("verify links %d", m.box.sentTo("verify", annHome)-before)
	burst.disarm()
	if err := m.svc.RequestPasswordReset(context.Background(), annHome); err != nil {
		t.Fatal(err)
	}
	if link := m.box.tokenTo("reset", annHome); link == "" {
		t.Fatalf("no reset link reached the owner's mailbox (%d verification links did): the stranger's bursts held it back",
			m.box.sentTo("verify", annHome))
	}
	if sent := m.box.sentTo("verify", annHome) - before; sent != 2 {
		t.Errorf("%d verification links were mailed; want 2 (all but the last of the hour's 3)", sent)
	}
}

// inBurst marks a request's context: its calls to a budget wait for the
// rest of its burst (lookTogether).
type inBurst struct{}

// lookTogether is an attempt store whose calls (but Take), for requests
// marked inBurst, wait until n such calls have come or 50 ms have
// passed, then all go on at once: a burst of requests that all look at
// a budget before any of them writes, all write before any reads again,
// and all read before any settles, as requests sent at once to a node
// do.
type lookTogether struct {
	accounts.AttemptStore
	n       int
	mu      sync.Mutex
	armed   bool
	waiting int
	arrived *gate
}

// gate is one group of waiting reads: open once, by the last to come or
// by the first whose wait ran out.
type gate struct {
	open chan struct{}
	once sync.Once
}

// gather holds a call of a request in a burst until n have come.
func (s *lookTogether) gather(ctx context.Context) {
	if ctx.Value(inBurst{}) == nil {
		return
	}
	s.mu.Lock()
	if !s.armed {
		s.mu.Unlock()
		return
	}
	if s.arrived == nil {
		s.arrived = &gate{open: make(chan struct{})}
	}
	g := s.arrived
	release := func() {
		g.once.Do(func() {
			close(g.open)
			s.waiting, s.arrived = 0, nil
		})
	}
	if s.waiting++; s.waiting == s.n {
		release()
	}
	s.mu.Unlock()
	select {
	case <-g.open:
	case <-time.After(50 * time.Millisecond):
		s.mu.Lock()
		if s.arrived == g {
			release()
		}
		s.mu.Unlock()
	}
}

// disarm lets every read through.
func (s *lookTogether) disarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
}

func (s *lookTogether) Read(ctx context.Context, scope string, triesSince, failuresSince time.Time, max int) (accounts.Tally, error) {
	s.gather(ctx)
	return s.AttemptStore.Read(ctx, scope, triesSince, failuresSince, max)
}

func (s *lookTogether) Begin(ctx context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	s.gather(ctx)
	return s.AttemptStore.Begin(ctx, scope, a, ttl)
}

func (s *lookTogether) Settle(ctx context.Context, scope string, a accounts.Attempt, o accounts.Outcome, ttl time.Duration) error {
	s.gather(ctx)
	return s.AttemptStore.Settle(ctx, scope, a, o, ttl)
}

func (s *lookTogether) Slots(ctx context.Context, scope string) (map[int]time.Time, error) {
	s.gather(ctx)
	return s.AttemptStore.Slots(ctx, scope)
}
