package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestARevertsResetLinkIsNotDroppedWithAFullMailPool: a stranger spends
// the owner's address's mails for the hour, and keeps the mail jobs of
// the process the owner's revert reaches busy (requests for links answer
// 202 at once and leave a job each, slow on an overloaded process: the
// attacker can overload a process). The revert's reset link is the one
// mail never held back (docs/design/throttle.md: "else a stranger keeps a
// recovered account's owner out for the hour"); dropped with the jobs
// past the pool's bound, the owner is left with a password that opens
// nothing, every older link stale (the revert is a recovery), and her own
// request for a link held back by the spent limit: out for the hour.
func TestARevertsResetLinkIsNotDroppedWithAFullMailPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	limitMail(m, 5)
	for range 6 { // a stranger spends the address's mails (their links go stale with the revert)
		if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
			t.Fatal(err)
		}
	}
	thiefTakes(t, m)
	// The process's jobs are slow from here: they run when the test says.
	slow, queued := false, []func(){}
	m.rewire(func(_ *memstore.Store, c *accounts.Config) {
		c.Background = func(job func()) {
			if slow {
				queued = append(queued, job)
				return
			}
			job()
		}
	})
	slow = true
	for i := range 64 { // requests for links, from a few addresses: 202 each, a job each
		if err := m.svc.RequestVerification(ctx, domain.Principal{}, fmt.Sprintf("nobody%d@example.net", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annHome)); err != nil {
		t.Fatal(err)
	}
	slow = false
	for _, job := range queued {
		job()
	}
	if m.box.tokenTo("reset", annHome) == "" {
		t.Fatal("no reset link at all")
	}
	opened, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
	if err == nil && opened.Token != "" {
		return
	}
	// Every link in her mailbox is stale: she asks for a new one.
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	opened, err = m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
	if err != nil || opened.Token == "" {
		t.Fatalf("after her revert, no reset link works (%v): the revert's was dropped with the process's mail jobs, the older ones are stale and her request is held back by the limit the stranger spent; she is out for the hour", err)
	}
}

// TestAPasswordChangesNoticeIsNotDroppedWithAFullMailPool: the thief,
// with a session and the password, fills the mail jobs of a process (an
// overloaded one, requests for links leaving a job each) and changes the
// password there: its notice, the owner's one warning and its reset link,
// must not be dropped with the jobs past the pool's bound.
func TestAPasswordChangesNoticeIsNotDroppedWithAFullMailPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	slow, queued := false, []func(){}
	m.rewire(func(_ *memstore.Store, c *accounts.Config) {
		c.Background = func(job func()) {
			if slow {
				queued = append(queued, job)
				return
			}
			job()
		}
	})
	thief, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	slow = true
	for i := range 64 {
		if err := m.svc.RequestVerification(ctx, domain.Principal{}, fmt.Sprintf("nobody%d@example.net", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.svc.ChangePassword(ctx, thief, m.ann.ID, accounts.Password(password), "the thief's own pass"); err != nil {
		t.Fatalf("the thief's change: %v", err)
	}
	slow = false
	for _, job := range queued {
		job()
	}
	if m.box.tokenTo("reset", annHome) == "" {
		t.Fatal("the password change's notice never reached the owner: dropped with the process's mail jobs")
	}
}

// TestShutdownWaitsForAPasswordChangesNotice: a password change answers,
// and its notice (the owner's one warning, with its reset link) goes out
// after the answer, in a goroutine of the process, slow (an SMTP server
// that takes its time). Then the process is told to stop (SIGTERM, a
// deploy): Serve drained the requests and returned at once, closing the
// session, and the process ended with the notice on its way. Nothing
// records a mail, so nothing sends it again: the owner never learns. The
// shutdown now waits for that work (Close) before it ends.
func TestShutdownWaitsForAPasswordChangesNotice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	slow := make(chan struct{})
	m.rewire(func(_ *memstore.Store, c *accounts.Config) {
		c.Background = func(job func()) {
			go func() {
				<-slow
				job()
			}()
		}
	})
	thief, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := m.svc.ChangePassword(ctx, thief, m.ann.ID, accounts.Password(password), "the thief's own pass"); err != nil {
		t.Fatalf("the thief's change: %v", err)
	}
	closed := make(chan bool, 1)
	go func() {
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		closed <- m.svc.Close(stopCtx)
	}()
	select {
	case <-closed:
		t.Fatal("the shutdown went on with the password change's notice still on its way")
	case <-time.After(50 * time.Millisecond):
	}
	close(slow)
	if !<-closed {
		t.Fatal("Close said work was left")
	}
	if m.box.tokenTo("reset", annHome) == "" {
		t.Fatal("the password change's notice never reached the owner")
	}
	// A job that outlives the shutdown's time is said to.
	stuck := make(chan struct{})
	defer close(stuck)
	m.rewire(func(_ *memstore.Store, c *accounts.Config) {
		c.Background = func(job func()) { go func() { <-stuck; job() }() }
	})
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if m.svc.Close(ended) {
		t.Fatal("Close said all finished with a mail still held")
	}
}
