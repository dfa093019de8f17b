package domain

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRetry(t *testing.T) {
	t.Parallel()
	busy := errors.New("busy")
	ctx := context.Background()

	rounds := 0
	err := Retry(ctx, 5, busy, func(attempt int) (bool, error) {
		if attempt != rounds {
			t.Fatalf("attempt %d in round %d", attempt, rounds)
		}
		rounds++
		return rounds == 3, nil
	})
	if err != nil || rounds != 3 {
		t.Fatalf("done in round 3: err %v after %d rounds", err, rounds)
	}

	rounds = 0
	err = Retry(ctx, 4, busy, func(int) (bool, error) { rounds++; return false, nil })
	if err != busy || rounds != 4 {
		t.Fatalf("never done: err %v after %d rounds, want busy after 4", err, rounds)
	}

	refused := errors.New("refused")
	rounds = 0
	err = Retry(ctx, 4, busy, func(int) (bool, error) { rounds++; return false, refused })
	if err != refused || rounds != 1 {
		t.Fatalf("an error ends the loop at once: err %v after %d rounds", err, rounds)
	}

	cancelled, cancel := context.WithCancel(ctx)
	rounds = 0
	err = Retry(cancelled, 100, busy, func(int) (bool, error) { rounds++; cancel(); return false, nil })
	if !errors.Is(err, context.Canceled) || rounds != 1 {
		t.Fatalf("a cancelled context stops the loop: err %v after %d rounds", err, rounds)
	}
}

func TestBackoffIsBoundedAndJittered(t *testing.T) {
	t.Parallel()
	seen := map[time.Duration]bool{}
	for attempt := 0; attempt < 40; attempt++ {
		for i := 0; i < 20; i++ {
			d := Backoff(attempt)
			limit := time.Duration(5*min(max(attempt, 1), 10)) * time.Millisecond
			if d < time.Millisecond || d > limit {
				t.Fatalf("Backoff(%d) = %v, want 1ms..%v", attempt, d, limit)
			}
			seen[d] = true
		}
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct pauses: not jittered", len(seen))
	}
}
