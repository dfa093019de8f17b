package memstore

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
)

// TestSlowCallRunsMeanwhileBetweenItsStartAndItsEnd: a slow read answers
// the row as it stood when the call began, a slow write decides its
// condition at the end; Meanwhile runs in between, with the clock moved
// by expireJump.
func TestSlowCallRunsMeanwhileBetweenItsStartAndItsEnd(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(start)
	users := s.Users()
	u := domain.User{ID: "u1", Status: domain.StatusActive, Version: 1}
	tag, err := users.Create(ctx, u, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := users.Activate(ctx, u, tag); err != nil {
		t.Fatal(err)
	}
	var during time.Time
	s.Meanwhile = func() {
		during = s.Now()
		next := u
		next.Version = 2
		if applied, err := users.Update(ctx, next); err != nil || !applied {
			t.Errorf("the update meanwhile: applied %v, %v", applied, err)
		}
	}
	slowAt := -1
	s.FaultAt = func(n int, _ string) Fault {
		if n == slowAt {
			return Slow
		}
		return None
	}
	slowAt = s.Calls()
	got, err := users.Get(ctx, u.ID)
	if err != nil || got.Version != 1 {
		t.Fatalf("a slow read answered version %d, %v; want the row as it stood at the start (1)", got.Version, err)
	}
	if during.Sub(start) < expireJump {
		t.Fatalf("Meanwhile ran at %v: the clock did not move past the leases", during)
	}
	// A slow write whose condition held at its start but not at its end.
	s.Meanwhile = func() {
		next := got
		next.Version = 3
		_, _ = users.Update(ctx, next) // applies: the row is at 2
	}
	slowAt = s.Calls()
	next := got
	next.Version = 3
	next.DisplayName = "late"
	applied, err := users.Update(ctx, next)
	if err != nil || applied {
		t.Fatalf("a slow write decided at its start: applied %v, %v", applied, err)
	}
	if final, _ := users.Get(ctx, u.ID); final.DisplayName == "late" {
		t.Fatal("the slow write applied over the change made meanwhile")
	}
}
