package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain/accounts"
)

// TestAProcessBehindTakesNoExpiredLink: ann asks for a reset link (an
// hour's) on a process on time. Ten minutes after it expired, a process
// whose clock runs 15 minutes behind took it for unused and unexpired
// (readToken judged expires_at by its clock alone; the row lives an hour
// past it, TokenGrace), and set the password with it. A token is expired
// once its end passed by this process's clock or the node's: the process
// behind refuses it, as every other does.
func TestAProcessBehindTakesNoExpiredLink(t *testing.T) {
	m := newMailWorld(t, true)
	cfg := m.cfg
	cfg.Now = func() time.Time { return m.store.Now().Add(-15 * time.Minute) }
	behind := accounts.New(cfg, m.store.Claims(), m.store.Users(), m.store.Sessions(), plainHasher{}, nopLog{})
	m.store.Advance(time.Hour + 10*time.Minute)
	if _, err := behind.ResetPassword(context.Background(), m.reset, newPassword, accounts.Client{}); !errors.Is(err, accounts.ErrTokenExpired) {
		t.Errorf("a reset link 10 minutes past its end, on a process 15 minutes behind, answered %v, want expired", err)
	}
	if _, err := m.svc.Login(context.Background(), "ann", password, accounts.Client{}); err != nil {
		t.Errorf("ann's password changed by an expired link: %v", err)
	}
}
