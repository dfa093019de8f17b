package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestALoginAheadLetsNoSuspendedUserInEarly: an admin on a process on
// time suspends the member for 5 minutes. A process whose clock runs 10
// minutes ahead took the suspension for ended at once (blocked judged
// "past its until" by its clock alone): the member logged in there a
// minute into it, and her session worked on it (Authenticate asks
// blocked too), 4 minutes before the suspension ended by any other clock. The sweeper and every
// finisher lift nothing before the end by the node's clock too
// (TestASweeperAheadLiftsNoSuspensionEarly); a login must not either (S3).
// Once it has ended by both clocks, the same process lets her in.
func TestALoginAheadLetsNoSuspendedUserInEarly(t *testing.T) {
	m := newModWorld(t)
	ctx := context.Background()
	cfg := m.cfg
	cfg.Now = func() time.Time { return m.store.Now().Add(10 * time.Minute) }
	ahead := accounts.New(cfg, m.store.Claims(), m.store.Users(), m.store.Sessions(), plainHasher{}, nopLog{})
	if err := m.suspend(5 * time.Minute); err != nil {
		t.Fatal(err)
	}
	m.store.Advance(time.Minute)
	if _, err := ahead.Login(ctx, "member", password, accounts.Client{}); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("S3: a login 1 minute into a 5-minute suspension, on a process 10 minutes ahead, answered %v, want suspended", err)
	}
	m.store.Advance(5 * time.Minute)
	if _, err := ahead.Login(ctx, "member", password, accounts.Client{}); err != nil {
		t.Errorf("a login after the suspension ended by every clock: %v", err)
	}
}
