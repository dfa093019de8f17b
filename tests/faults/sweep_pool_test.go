package faults

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestAThiefsSignOutsCannotCrowdOutTheOwnersResetLink: a thief with
// ann's session signs out everywhere else over and over (no rate limit:
// the owner must be able to, facing a thief), on a loaded node where
// each sweep of the sessions it ended is slow. Each left a sweep in the
// process's mail jobs, 64 at most, so the reset link ann asked for
// meanwhile was dropped. Sweeps run apart from the mail, one at a time
// per account: the sign-outs asked while one ran are done by one more
// run after it, which reads the account afresh.
func TestAThiefsSignOutsCannotCrowdOutTheOwnersResetLink(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, false)
	ctx := context.Background()
	slow := &slowEntries{SessionStore: m.store.Sessions(), release: make(chan struct{})}
	cfg := m.cfg
	cfg.Background = domain.InGoroutine
	svc := accounts.New(cfg, m.store.Claims(), m.rows, slow, plainHasher{}, nopLog{})
	thief, err := svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := svc.RevokeSessions(ctx, thief, m.ann.ID, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); m.box.tokenTo("reset", annHome) == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(slow.release)
			t.Fatal("no reset link reached ann's mailbox: the thief's sweeps held every job and hers was dropped")
		}
	}
	close(slow.release)
	closing, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if !svc.Close(closing) {
		t.Fatal("the sweeps did not end")
	}
	if n := slow.reads.Load(); n != 2 {
		t.Errorf("the sweeps read the sessions' index %d times for 100 sign-outs; want 2 (the first, and one more for those asked while it ran)", n)
	}
}

// slowEntries is the memory store's sessions whose index read waits
// until release is closed (a sweep on a loaded node).
type slowEntries struct {
	accounts.SessionStore
	release chan struct{}
	reads   atomic.Int32
}

func (s *slowEntries) Entries(ctx context.Context, userID string) ([]domain.Session, error) {
	s.reads.Add(1)
	<-s.release
	return s.SessionStore.Entries(ctx, userID)
}

// TestAFullCleanUpPoolStillEndsTheThiefsEnrolments: a thief with ann's
// password and a session begins ten authenticators on her account and
// confirms none, filling its bound. He keeps the process's clean-ups
// full: 64 accounts of his own, each signing out everywhere else while
// their sweeps are slow. Ann signs out everywhere else, which ends his
// enrolments, but with the pool full that clean-up was dropped, and her
// own enrolment was refused too_many_factors until his expired. A
// bounded clean-up that matters to the owner runs inside her request
// when the pool is full.
func TestAFullCleanUpPoolStillEndsTheThiefsEnrolments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false)
	m.verify(t)
	withFactors(t, m, nil)
	for range 10 {
		thiefEnrols(t, m, 0)
	}
	var theirs []string
	for i := range 64 {
		name := fmt.Sprintf("his%d", i)
		if err := m.signup(name, name+"@example.net"); err != nil {
			t.Fatal(err)
		}
		r, err := m.svc.Login(ctx, name, password, accounts.Client{})
		if err != nil {
			t.Fatal(err)
		}
		theirs = append(theirs, r.Token)
	}
	slow := &slowEntries{SessionStore: m.store.Sessions(), release: make(chan struct{})}
	defer close(slow.release)
	cfg := m.cfg
	cfg.Background = domain.InGoroutine
	svc := accounts.New(cfg, m.store.Claims(), m.rows, slow, plainHasher{}, nopLog{})
	for i, token := range theirs {
		p, err := svc.Authenticate(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.RevokeSessions(ctx, p, p.UserID, true); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); slow.reads.Load() <= int32(i); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of his %d sweeps began", slow.reads.Load(), i+1)
			}
		}
	}
	ann, err := svc.Authenticate(ctx, m.sessions[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.RevokeSessions(ctx, ann, m.ann.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.EnrolTOTP(ctx, ann, m.ann.ID, "mine", accounts.Password(password)); err != nil {
		t.Fatalf("her enrolment once she signed out everywhere else, the clean-ups full: %v", err)
	}
}
