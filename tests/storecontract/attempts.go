package storecontract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"shelf/domain/accounts"
)

// Attempts runs AttemptChecks.
func Attempts(t *testing.T, open Open[accounts.AttemptStore]) { Run(t, open, AttemptChecks) }

// AttemptChecks are accounts.AttemptStore's contract, what the throttle
// counts on (docs/design/throttle.md).
var AttemptChecks = []Check[accounts.AttemptStore]{
	{"ReadsOldestFirstAfterSince", attemptsReadOldestFirst},
	{"SettledStaysSettled", attemptsSettledStaysSettled},
	{"RowsLeaveByTheirTTL", attemptsLeaveByTTL},
	{"ASlotIsTakenByOneAttempt", slotTakenByOne},
	{"ASlotFreesByItsTTL", slotFreesByTTL},
}

// tally is a Tally as "id:outcome" of its tries and "id" of its failures.
func tally(t testing.TB, s accounts.AttemptStore, scope string, triesSince, failuresSince time.Time, max int) (tries, failures []string) {
	t.Helper()
	got, err := s.Read(context.Background(), scope, triesSince, failuresSince, max)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Tries {
		tries = append(tries, fmt.Sprintf("%s:%s", r.ID, r.Outcome))
	}
	for _, r := range got.Failures {
		failures = append(failures, r.ID)
	}
	return tries, failures
}

// attemptsReadOldestFirst: tries and failures read oldest first (by
// start, then id), only those begun after their since, up to max each;
// another scope reads none.
func attemptsReadOldestFirst(t testing.TB, s accounts.AttemptStore, c Clock) {
	ctx := context.Background()
	scope, now := Key("scope"), At(c.Now())
	rows := map[string]accounts.Attempt{
		"old": {ID: "old", At: now.Add(-3 * time.Second)},
		"c":   {ID: "c", At: now.Add(-2 * time.Second)},
		"a":   {ID: "a", At: now.Add(-time.Second)},
		"b":   {ID: "b", At: now.Add(-time.Second)},
		"d":   {ID: "d", At: now},
	}
	for _, id := range []string{"d", "a", "old", "c", "b"} {
		if err := s.Begin(ctx, scope, rows[id], Long); err != nil {
			t.Fatal(err)
		}
		if err := s.Fail(ctx, scope, rows[id], Long); err != nil {
			t.Fatal(err)
		}
	}
	since := now.Add(-3 * time.Second)
	if tries, failures := tally(t, s, scope, since, since, 10); !slices.Equal(tries, []string{"c:", "a:", "b:", "d:"}) || !slices.Equal(failures, []string{"c", "a", "b", "d"}) {
		t.Fatalf("read after %v: tries %v failures %v; want c a b d in flight, c a b d failed", since, tries, failures)
	}
	if tries, failures := tally(t, s, scope, now.Add(-time.Second), since.Add(-time.Second), 2); !slices.Equal(tries, []string{"d:"}) || !slices.Equal(failures, []string{"old", "c"}) {
		t.Fatalf("read by 2: tries %v failures %v; want d, and old c", tries, failures)
	}
	if tries, failures := tally(t, s, scope+"-other", since, since, 10); len(tries)+len(failures) != 0 {
		t.Fatalf("another scope read %v %v", tries, failures)
	}
}

// attemptsSettledStaysSettled: a settled try reads with its outcome, and
// a write of the try landing after its settling (a retry, a copy, a
// hinted write) leaves it settled; a try settled whose write never landed
// reads settled too (it does not count).
func attemptsSettledStaysSettled(t testing.TB, s accounts.AttemptStore, c Clock) {
	ctx := context.Background()
	scope, now := Key("scope"), At(c.Now())
	refused := accounts.Attempt{ID: "refused", At: now.Add(-time.Second)}
	passed := accounts.Attempt{ID: "passed", At: now}
	if err := s.Begin(ctx, scope, refused, Long); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, scope, refused, accounts.Refused, Long); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, scope, passed, accounts.Passed, Long); err != nil {
		t.Fatal(err)
	}
	for _, a := range []accounts.Attempt{refused, passed} { // landing late
		if err := s.Begin(ctx, scope, a, Long); err != nil {
			t.Fatal(err)
		}
	}
	if tries, _ := tally(t, s, scope, now.Add(-time.Minute), now, 10); !slices.Equal(tries, []string{"refused:refused", "passed:passed"}) {
		t.Fatalf("settled tries read %v; want refused, then passed", tries)
	}
}

// attemptsLeaveByTTL: a try and a failure are gone once their TTL has
// passed, not before.
func attemptsLeaveByTTL(t testing.TB, s accounts.AttemptStore, c Clock) {
	ctx := context.Background()
	scope, now := Key("scope"), At(c.Now())
	a := accounts.Attempt{ID: "a", At: now}
	if err := s.Begin(ctx, scope, a, TTL); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(ctx, scope, a, TTL); err != nil {
		t.Fatal(err)
	}
	since := now.Add(-time.Minute)
	if tries, failures := tally(t, s, scope, since, since, 10); len(tries) != 1 || len(failures) != 1 {
		t.Fatalf("before their TTL: tries %v failures %v", tries, failures)
	}
	c.Pass(TTLPassed)
	if tries, failures := tally(t, s, scope, since, since, 10); len(tries)+len(failures) != 0 {
		t.Fatalf("after their TTL: tries %v failures %v", tries, failures)
	}
}

// slotTakenByOne: of racers taking one slot at once, exactly one holds
// it; its attempt sent again is told it holds it, the others are not;
// the slots read say which are taken, until about the TTL from now, and
// another scope has none.
func slotTakenByOne(t testing.TB, s accounts.AttemptStore, c Clock) {
	ctx := context.Background()
	scope := Key("mail")
	took := concurrently(racers, func(i int) error {
		ok, err := s.Take(ctx, scope, 0, accounts.Attempt{ID: fmt.Sprint("racer-", i), At: At(c.Now())}, Long)
		if err == nil && !ok {
			return errNotTaken
		}
		return err
	})
	winner := -1
	for i, err := range took {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("racers %d and %d both took slot 0", winner, i)
		case err == nil:
			winner = i
		case err != errNotTaken:
			t.Fatal(err)
		}
	}
	if winner < 0 {
		t.Fatal("no racer took slot 0")
	}
	if ok, err := s.Take(ctx, scope, 0, accounts.Attempt{ID: fmt.Sprint("racer-", winner)}, Long); err != nil || !ok {
		t.Fatalf("the winner sent again: %v %v, want taken", ok, err)
	}
	if ok, err := s.Take(ctx, scope, 0, accounts.Attempt{ID: "late"}, Long); err != nil || ok {
		t.Fatalf("a late attempt at a held slot: %v %v, want not taken", ok, err)
	}
	if ok, err := s.Take(ctx, scope, 2, accounts.Attempt{ID: "late"}, Long); err != nil || !ok {
		t.Fatalf("a free slot: %v %v, want taken", ok, err)
	}
	slots, err := s.Slots(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 2 || slots[0].IsZero() || slots[2].IsZero() {
		t.Fatalf("slots read %v; want 0 and 2", slots)
	}
	for n, until := range slots {
		if left := until.Sub(c.Now()); left < Long-time.Minute || left > Long+time.Minute {
			t.Fatalf("slot %d frees in %v; want about %v", n, left, Long)
		}
	}
	if other, err := s.Slots(ctx, scope+"-other"); err != nil || len(other) != 0 {
		t.Fatalf("another scope's slots: %v %v", other, err)
	}
}

// errNotTaken is a racer's Take that did not take its slot.
var errNotTaken = errors.New("not taken")

// slotFreesByTTL: a slot is held until its TTL has passed, then free to
// be taken by another attempt.
func slotFreesByTTL(t testing.TB, s accounts.AttemptStore, c Clock) {
	ctx := context.Background()
	scope := Key("mail")
	if ok, err := s.Take(ctx, scope, 1, accounts.Attempt{ID: "first"}, TTL); err != nil || !ok {
		t.Fatalf("taking a free slot: %v %v", ok, err)
	}
	if ok, err := s.Take(ctx, scope, 1, accounts.Attempt{ID: "second"}, TTL); err != nil || ok {
		t.Fatalf("taking it again before its TTL: %v %v, want not taken", ok, err)
	}
	c.Pass(TTLPassed)
	if slots, err := s.Slots(ctx, scope); err != nil || len(slots) != 0 {
		t.Fatalf("after its TTL the slots read %v %v; want none", slots, err)
	}
	if ok, err := s.Take(ctx, scope, 1, accounts.Attempt{ID: "second"}, TTL); err != nil || !ok {
		t.Fatalf("taking it after its TTL: %v %v, want taken", ok, err)
	}
}
