package accounts

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAHouseholdsSecondLoginIsNotStarvedByAThiefsSequentialCalls: a thief
// sends from a hundred /56s of an IPv6 /48, one call at a time from each
// (the next as soon as the last is answered), so the /48's 32 places are
// always full and some of his /56s always wait. The owner's household, a
// /56 of the same /48, logs in from two tabs: the second waits while the
// first is in, then the first is done. A /56 whose last call left with
// none of its own waiting was forgotten, so each of the thief's calls
// came back as never served and went ahead of the owner's second tab,
// served once already: it waited until its request ended. Now a line
// remembers when each /56 was last served while the line lives, and the
// second tab goes within about a round of the thief's /56s.
func TestAHouseholdsSecondLoginIsNotStarvedByAThiefsSequentialCalls(t *testing.T) {
	t.Parallel()
	const thieves = 100
	hasher := &turnHasher{owner: make(chan struct{})}
	h := lineUp(hasher)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range thieves {
		ctx := WithClient(context.Background(), Client{IP: fmt.Sprintf("2001:db8:1:%02x00::1", i)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _, _ = h.Verify(ctx, "thief", "")
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for hasher.thiefCalls.Load() < 2*thieves { // the thief's calls are flowing
		time.Sleep(time.Millisecond)
	}

	owner := WithClient(context.Background(), Client{IP: "2001:db8:1:ff00::7"})
	first := make(chan error, 1)
	go func() { _, _, err := h.Verify(owner, "owner", ""); first <- err }()
	for hasher.ownerCalls.Load() < 1 { // the first tab is in the hasher
		time.Sleep(time.Millisecond)
	}
	second, cancel := context.WithTimeout(owner, 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, _, err := h.Verify(second, "second tab", ""); done <- err }()
	for !h.waitsAt(siteKey("2001:db8:1:ff00::7"), LineKey("2001:db8:1:ff00::7")) { // the second tab waits
		time.Sleep(time.Millisecond)
	}
	close(hasher.owner) // the first tab is done
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := <-done; err != nil {
		t.Fatalf("the second tab waited %v and gave up: %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("the second tab went in after %v", time.Since(start).Round(time.Millisecond))
}

// waitsAt reports whether a call that came by by waits at the line key.
func (h *hashLines) waitsAt(key, by string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.lines[key]
	if l == nil {
		return false
	}
	for _, w := range l.waiting {
		if w.by == by {
			return true
		}
	}
	return false
}

// turnHasher takes half a millisecond a hash; the owner's first call
// ("owner") stays in until owner is closed.
type turnHasher struct {
	owner      chan struct{}
	thiefCalls atomic.Int64
	ownerCalls atomic.Int64
}

func (h *turnHasher) Hash(ctx context.Context, pw string) (string, error) { return pw, nil }

func (h *turnHasher) Verify(ctx context.Context, pw, phc string) (bool, bool, error) {
	switch pw {
	case "thief":
		h.thiefCalls.Add(1)
	case "owner":
		h.ownerCalls.Add(1)
		<-h.owner
	}
	time.Sleep(500 * time.Microsecond)
	return false, false, ctx.Err()
}

func (h *turnHasher) Burn(ctx context.Context, pw string) error { return nil }
