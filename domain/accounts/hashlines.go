package accounts

import (
	"context"
	"sync"
)

// hashesPerAddress bounds the password hashes (a login's, a burn's, a
// signup's, a current password's check, a reset's) one client address
// (AddressKey) has in the hasher at once in this process, waiting for its
// slots or in one; its others wait in a line of their own, in the order
// they came. The hasher's slots are one per CPU, taken first come, first
// served, and a hash is tens of milliseconds of CPU: ten addresses each
// sending the burst of logins at unknown names the rate limit lets
// through put 300 hashes ahead of the owner's login, seconds, past her
// request's timeout (TestTenAddressesCannotQueueTheHasherAheadOfTheOwner).
// Now she waits for at most this many per other address. One person logs
// in or signs up one at a time; two leave room for a second tab.
const hashesPerAddress = 2

// hashesPerLine bounds the hashes one IPv6 line (LineKey, a /56: a home's
// 256 /64s) has in the hasher at once, its /64s' together: a /56 sending
// from every /64 put 512 hashes ahead of the owner's
// (TestOneLineCannotQueueTheHasherAheadOfTheOwner). Eight leave room for
// a household, or a small office, at once.
const hashesPerLine = 8

// hashesPerSite bounds the hashes one IPv6 /48 (a site's or a hosting
// provider's allocation: 256 /56s) has in the hasher at once: a /48
// sending from every /56 put 2 048 ahead of the owner's, tens of seconds
// (TestOneSiteCannotQueueTheHasherAheadOfTheOwner). A carrier with many
// customers in one /48 has them wait their turn here (a hash is tens of
// milliseconds), never refused.
const hashesPerSite = 32

// hashLines is a PasswordHasher that lets each client address (from ctx,
// WithClient) have at most hashesPerAddress calls in the hasher it wraps.
// A call without an address goes straight in (a tool's, a test's).
type hashLines struct {
	hasher PasswordHasher

	mu    sync.Mutex
	lines map[string]*hashLine
}

// hashLine is one address's calls in the hasher and those waiting to be.
type hashLine struct {
	in int
	// inBy counts the calls in by the narrower key they came by (a
	// line's by address, a site's by line).
	inBy map[string]int
	// served says when each narrower key was last given a place (turns
	// counts them): of those with the fewest in, the one served longest
	// ago goes first, one never served (no entry) before all. It is kept
	// while the line lives, whether or not the key has calls in or
	// waiting: a key forgotten when its last call left came back as
	// never served, so a thief sending one call at a time from each of
	// his /56s always went ahead of an owner's /56 served once already,
	// and her second tab waited until its request ended
	// (TestAHouseholdsSecondLoginIsNotStarvedByAThiefsSequentialCalls).
	// It holds at most one entry per narrower key of the line (256: the
	// /64s of a /56, the /56s of a /48), and goes with the line once
	// nothing of it is in.
	served  map[string]uint64
	turns   uint64
	waiting []waiter
}

// waiter is a call waiting for its place: its turn, and the narrower key
// it came by.
type waiter struct {
	turn chan struct{}
	by   string
}

func lineUp(h PasswordHasher) *hashLines {
	return &hashLines{hasher: h, lines: map[string]*hashLine{}}
}

func (h *hashLines) Hash(ctx context.Context, password string) (string, error) {
	leave, err := h.enter(ctx)
	if err != nil {
		return "", err
	}
	defer leave()
	return h.hasher.Hash(ctx, password)
}

func (h *hashLines) Verify(ctx context.Context, password, phc string) (ok, rehash bool, err error) {
	leave, err := h.enter(ctx)
	if err != nil {
		return false, false, err
	}
	defer leave()
	return h.hasher.Verify(ctx, password, phc)
}

// Burn, like the hasher's, fails without the work if ctx ends while it
// waits.
func (h *hashLines) Burn(ctx context.Context, password string) error {
	leave, err := h.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	return h.hasher.Burn(ctx, password)
}

// enter waits until ctx's address has fewer than hashesPerAddress calls
// in the hasher, then its line (an IPv6 /56) fewer than hashesPerLine,
// then its site (an IPv6 /48) fewer than hashesPerSite, or ctx ends (its
// error); leave lets the next ones in. A call takes its places narrowest
// first and gives them back the other way round, so no two calls ever
// wait for each other's.
func (h *hashLines) enter(ctx context.Context) (leave func(), err error) {
	ip := clientOf(ctx).IP
	if ip == "" {
		return func() {}, nil
	}
	var leaves []func()
	leaveAll := func() {
		for i := len(leaves) - 1; i >= 0; i-- {
			leaves[i]()
		}
	}
	for _, l := range []struct {
		key, by string
		most    int
	}{{AddressKey(ip), "", hashesPerAddress}, {LineKey(ip), AddressKey(ip), hashesPerLine}, {siteKey(ip), LineKey(ip), hashesPerSite}} {
		if l.key == "" {
			continue
		}
		leave, err := h.enterLine(ctx, l.key, l.by, l.most)
		if err != nil {
			leaveAll()
			return nil, err
		}
		leaves = append(leaves, leave)
	}
	return leaveAll, nil
}

// siteKey is the /48 of an IPv6 address; "" for IPv4, or none.
func siteKey(ip string) string { return ipv6Prefix(ip, 48) }

// enterLine waits until the line key has fewer than most calls in, or
// ctx ends. by is the narrower key the call came by: a place that frees
// goes to the waiting call whose narrower key has the fewest calls in,
// the first come among those, so one /56 (or /64) with many calls
// waiting at a wider line takes no more turns than another with one:
// an owner in a thief's /48 waits for about one hash, not for every one
// the thief's /56s queued before her (the sessions review: 2 048, past
// her request's timeout; TestAnOwnerInAThiefsSiteWaitsAboutOneHash).
func (h *hashLines) enterLine(ctx context.Context, key, by string, most int) (leave func(), err error) {
	h.mu.Lock()
	l := h.lines[key]
	if l == nil {
		l = &hashLine{inBy: map[string]int{}, served: map[string]uint64{}}
		h.lines[key] = l
	}
	if l.in < most {
		l.in++
		l.give(by)
		h.mu.Unlock()
		return func() { h.leave(key, l, by) }, nil
	}
	turn := make(chan struct{}, 1)
	l.waiting = append(l.waiting, waiter{turn: turn, by: by})
	h.mu.Unlock()
	select {
	case <-turn:
		return func() { h.leave(key, l, by) }, nil
	case <-ctx.Done():
		h.mu.Lock()
		for i, w := range l.waiting {
			if w.turn == turn {
				l.waiting = append(l.waiting[:i], l.waiting[i+1:]...)
				h.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		h.mu.Unlock()
		h.leave(key, l, by) // the turn came meanwhile: pass it on
		return nil, ctx.Err()
	}
}

// give counts a place given to a call that came by by.
func (l *hashLine) give(by string) {
	l.inBy[by]++
	l.turns++
	l.served[by] = l.turns
}

// leave hands the call's place to a waiting call, of those whose narrower
// key has the fewest calls in the one whose key was served longest ago
// (never: first), the first come of that key; or gives it up (and forgets
// the line, with when its keys were served, once nothing of it is in or
// waiting).
func (h *hashLines) leave(key string, l *hashLine, by string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.inBy[by]--; l.inBy[by] == 0 {
		delete(l.inBy, by)
	}
	if len(l.waiting) > 0 {
		next := 0
		for i, w := range l.waiting {
			n, best := l.waiting[i], l.waiting[next]
			if in, bestIn := l.inBy[n.by], l.inBy[best.by]; in < bestIn || (in == bestIn && l.served[w.by] < l.served[best.by]) {
				next = i
			}
		}
		w := l.waiting[next]
		l.waiting = append(l.waiting[:next], l.waiting[next+1:]...)
		l.give(w.by)
		w.turn <- struct{}{} // buffered: never blocks
		return
	}
	l.in--
	if l.in == 0 {
		delete(h.lines, key)
	}
}
