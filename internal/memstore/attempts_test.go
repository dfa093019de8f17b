package memstore_test

import (
	"testing"
	"time"

	"shelf/domain/accounts"
	"shelf/internal/memstore"
	"shelf/internal/testkit"
)

// TestAttemptsKeepTheContract: the fake keeps repository.Attempts'
// contract (repository/throttle_test.go holds the real one to it).
func TestAttemptsKeepTheContract(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	st := memstore.New(start)
	testkit.CheckAttemptStore(t, st.Attempts(), "scope", start)
}

// TestAttemptsExpire: a row is gone once its TTL has passed on the
// store's clock.
func TestAttemptsExpire(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	st := memstore.New(start)
	s := st.Attempts()
	ctx := t.Context()
	if err := s.Add(ctx, "scope", accounts.Attempt{ID: "a", At: start}, time.Minute); err != nil {
		t.Fatal(err)
	}
	st.Advance(time.Minute - time.Millisecond)
	if got, _ := s.List(ctx, "scope", 10); len(got) != 1 {
		t.Fatalf("before its TTL: %v", got)
	}
	st.Advance(time.Millisecond)
	if got, _ := s.List(ctx, "scope", 10); len(got) != 0 {
		t.Fatalf("at its TTL: %v", got)
	}
}
