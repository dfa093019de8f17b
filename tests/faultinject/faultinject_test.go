package faultinject

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/gocql/gocql"

	"shelf/repository"
)

// sender is a Sender that only sends; its transactions log their attempts.
type sender struct {
	repository.Sender
	mu  sync.Mutex
	log []string
}

func (s *sender) Begin(string) repository.Transaction { return tx{s} }

func (s *sender) add(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, what)
}

func (s *sender) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

type tx struct{ s *sender }

func (t tx) Attempt(ctx context.Context, run func(context.Context) (bool, error)) (bool, error) {
	return run(ctx)
}
func (t tx) Done() { t.s.add("done") }

// attempt is attempt n of a transaction: it logs that it landed.
func attempt(s *sender, n string) func(context.Context) (bool, error) {
	return func(context.Context) (bool, error) {
		s.add(n)
		return true, nil
	}
}

// TestHeldAttemptsLandWhenTheirFaultSays: an attempt held by ErrLandLate
// lands just before the next attempt, one held by ErrLandAfterAnswer
// after the transaction's answer, one held by ErrHoldWrite only at
// LandHeld; each answers a timeout at once, and AfterLWT replaces an
// answer that applied.
func TestHeldAttemptsLandWhenTheirFaultSays(t *testing.T) {
	t.Parallel()
	s := &sender{}
	inj := &Injector{next: s}
	ctx := context.Background()
	faults := []error{ErrLandAfterAnswer, ErrLandLate, ErrHoldWrite, nil}
	inj.Set(func(name string, at Point) error {
		if name != "t.op" || at != BeforeLWT || len(faults) == 0 {
			return nil
		}
		err := faults[0]
		faults = faults[1:]
		return err
	})
	x := inj.Begin("t.op")
	for _, n := range []string{"after-answer", "late", "held"} {
		if _, err := x.Attempt(ctx, attempt(s, n)); !errors.Is(err, gocql.ErrTimeoutNoResponse) {
			t.Fatalf("%s: answered %v, want a timeout", n, err)
		}
	}
	if got := s.events(); !slices.Equal(got, []string{"late"}) {
		t.Fatalf("before the fourth attempt: %v, want only the late one landed (before the third)", got)
	}
	if applied, err := x.Attempt(ctx, attempt(s, "fourth")); !applied || err != nil {
		t.Fatalf("fourth: %v %v", applied, err)
	}
	x.Done()
	inj.WaitLate()
	if got := s.events(); !slices.Equal(got, []string{"late", "fourth", "done", "after-answer"}) {
		t.Fatalf("after the answer: %v", got)
	}
	if err := inj.LandHeld(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.events(); got[len(got)-1] != "held" {
		t.Fatalf("after LandHeld: %v", got)
	}
	lost := &gocql.RequestErrCASWriteUnknown{}
	inj.Set(func(_ string, at Point) error {
		if at == AfterLWT {
			return lost
		}
		return nil
	})
	y := inj.Begin("t.op")
	if _, err := y.Attempt(ctx, attempt(s, "lost")); err != lost {
		t.Fatalf("an answer lost after applying: %v", err)
	}
	y.Done()
	if got := s.events(); got[len(got)-2] != "lost" {
		t.Fatalf("the attempt whose answer was lost did not apply: %v", got)
	}
}
