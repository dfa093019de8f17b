package degraded

import (
	"strings"
	"testing"
	"time"
)

// TestSummarize checks the window arithmetic the tables rest on: requests
// are counted in the window they finished in, errors by kind, whole
// seconds without a good answer, 503s without Retry-After.
func TestSummarize(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	results := []result{
		{Kind: "user-read", Start: at(0), End: at(100), Status: 200, Want: 200},
		{Kind: "signup", Start: at(50), End: at(300), Status: 201, Want: 201},
		{Kind: "library-page", Start: at(1000), End: at(2500), Status: 503, Want: 200, RetryAfter: true},
		{Kind: "library-page", Start: at(1000), End: at(2600), Status: 503, Want: 200},
		{Kind: "content-update", Start: at(2000), End: at(2700), Status: 500, Want: 200},
		{Kind: "user-read", Start: at(2000), End: at(2800), Status: 0, Want: 200},
		{Kind: "user-read", Start: at(3000), End: at(3100), Status: 200, Want: 200},
		{Kind: "user-read", Start: at(3500), End: at(4200), Status: 200, Want: 200}, // after the window
	}
	s := summarize(window{Name: "w", From: t0, To: at(4000)}, results)
	if s.Requests != 7 || s.OK != 3 {
		t.Fatalf("requests %d ok %d, want 7 and 3", s.Requests, s.OK)
	}
	if s.OKPerSec != 0.75 {
		t.Errorf("ok/s %v, want 0.75", s.OKPerSec)
	}
	want := map[string]int{"503": 2, "5xx": 1, "no answer": 1}
	for k, n := range want {
		if s.Errors[k] != n {
			t.Errorf("errors[%s] = %d, want %d", k, s.Errors[k], n)
		}
	}
	if s.NoRetryAfter != 1 {
		t.Errorf("503s without Retry-After %d, want 1", s.NoRetryAfter)
	}
	// Seconds 1 and 2 finished nothing good.
	if s.IdleSeconds != 2 {
		t.Errorf("idle seconds %d, want 2", s.IdleSeconds)
	}
	if got := s.Kinds["user-read"].OK; got != 2 {
		t.Errorf("user reads ok %d, want 2", got)
	}
	if s.share503() != 2.0/7 {
		t.Errorf("503 share %v, want 2/7", s.share503())
	}
}

// TestBackAfter checks the time from a heal to the first second at half
// the healthy rate: seconds before the heal do not count.
func TestBackAfter(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	series := []perSecond{{Second: 0, OK: 10}, {Second: 1, OK: 0}, {Second: 2, OK: 1}, {Second: 3, OK: 6}}
	if got := backAfter(t0, t0.Add(1500*time.Millisecond), series, 10); got != 2.5 {
		t.Errorf("back after %v s, want 2.5", got)
	}
	if got := backAfter(t0, t0.Add(1500*time.Millisecond), series[:3], 10); got != -1 {
		t.Errorf("never back: %v, want -1", got)
	}
}

// TestGoals checks that a window that misses a goal fails it and one that
// meets it passes.
func TestGoals(t *testing.T) {
	healthy := summary{Name: "healthy", OKPerSec: 100, ReadP99: 100, Requests: 1000, OK: 1000, Errors: map[string]int{},
		Kinds: map[string]kindSummary{"user-read": {OKPerSec: 40}, "library-page": {OKPerSec: 35}, "content-update": {OKPerSec: 20}, "signup": {OKPerSec: 5}}}
	good := healthy
	good.Name, good.OKPerSec, good.ReadP99 = "one node hung", 80, 150
	bad := good
	bad.Name, bad.ReadP99 = "one node slow", 250
	killed := healthy
	killed.Name, killed.Requests = "one node killed", 1001
	lines := goals([]summary{healthy, good, bad, killed}, 2)
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "PASS one node hung") || !strings.HasPrefix(lines[1], "FAIL one node slow") ||
		!strings.HasPrefix(lines[2], "FAIL one node killed") {
		t.Fatalf("verdicts:\n%s", strings.Join(lines, "\n"))
	}
}

// TestEachFaultIsMeasuredAgainstTheHealthyWindowBeforeIt: the machine
// slowed by half between the first fault and the roll; the roll, at 0.9
// of the healthy window played right before it, passes, where against
// the run's first it read 0.45; that baseline itself is shown against
// the first (0.50×), the drift.
func TestEachFaultIsMeasuredAgainstTheHealthyWindowBeforeIt(t *testing.T) {
	healthy := summary{Name: "healthy, before hung", Baseline: true, OKPerSec: 100, ReadP99: 100, Requests: 1000, OK: 1000, Errors: map[string]int{},
		Kinds: map[string]kindSummary{}}
	hung := healthy
	hung.Name, hung.Baseline, hung.OKPerSec = "one node hung", false, 80
	slower := healthy
	slower.Name, slower.OKPerSec = "healthy, before roll", 50
	roll := slower
	roll.Name, roll.Baseline, roll.OKPerSec = "rolling restart", false, 45
	sums := []summary{healthy, hung, slower, roll}
	lines := goals(sums, -1)
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "PASS rolling restart: throughput 0.90×") {
		t.Fatalf("verdicts:\n%s", strings.Join(lines, "\n"))
	}
	tbl := table(sums)
	for _, row := range []string{"| one node hung | 80 | 0.80× |", "| healthy, before roll | 50 | 0.50× |", "| rolling restart | 45 | 0.90× |"} {
		if !strings.Contains(tbl, row) {
			t.Errorf("the table has no row %q:\n%s", row, tbl)
		}
	}
}

// TestPace: at a rate, each client's turns come every clients/rate
// seconds, the clients spread over that interval; a client that fell
// behind goes at once and does not catch up in a burst; no rate, no wait.
func TestPace(t *testing.T) {
	if d := newPace(0, 3, 16).turn(time.Now()); d != 0 {
		t.Fatalf("no rate waited %v", d)
	}
	p := newPace(8, 1, 4) // 4 clients, 8 a second in all: every 500 ms each
	if p.every != 500*time.Millisecond {
		t.Fatalf("every = %v, want 500ms", p.every)
	}
	// From its start, a client answered at once waits a quarter interval
	// (client 1 of 4), then whole ones.
	now := p.next.Add(-125 * time.Millisecond)
	for i, want := range []time.Duration{125, 500, 500} {
		d := p.turn(now)
		if d != want*time.Millisecond {
			t.Fatalf("turn %d: waited %v, want %vms", i, d, want)
		}
		now = now.Add(d)
	}
	// Its next turn is 500 ms after the last; an answer 3 s later is far
	// behind: the client goes at once, and its next turn is a whole
	// interval after that, not the turns it missed.
	late := now.Add(3 * time.Second)
	if d := p.turn(late); d != 0 {
		t.Fatalf("a client behind waited %v", d)
	}
	if d := p.turn(late.Add(10 * time.Millisecond)); d != 490*time.Millisecond {
		t.Fatalf("after a stall the next turn is in %v, want 490ms", d)
	}
}
