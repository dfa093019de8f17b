package domain

import (
	"context"
	"sync"
	"time"
)

// Gate lets one caller at a time per key through, within this process.
// It never keeps an invariant: compare-and-sets do, across processes. It
// keeps this process's writers of one row from racing each other in Paxos,
// where every lost round costs the loser another round trip, and where
// dozens at once on one partition run into Cassandra's contention timeout
// (a write timeout of unknown outcome: a 503) on a loaded node. Queued
// here, they take turns at one Paxos round each; only other processes'
// writers of the same row still race them.
type Gate struct {
	mu   sync.Mutex
	keys map[string]*gateKey
}

// gateKey is one key's turn: whether a caller holds it, the callers
// waiting for it in the order they came (each is handed the turn in that
// order), and moved, closed and replaced each time the turn passes on.
// The key is forgotten when nobody holds or waits for it.
type gateKey struct {
	held  bool
	queue []chan struct{}
	moved chan struct{}
}

// Enter waits for key's turn while the turns move on, and never past
// ctx's end (its error). Turns go in the order callers came. A caller that
// saw no turn pass for patience goes on without one (leave is then a
// no-op): the holder may be stuck on a slow statement or held for a test,
// and nothing but load depends on the turns; a queue that moves is worth
// waiting in, however long. leave gives the turn to the next caller; call
// it exactly once. patience 0 never waits.
func (g *Gate) Enter(ctx context.Context, key string, patience time.Duration) (leave func(), err error) {
	if patience <= 0 {
		return func() {}, nil
	}
	g.mu.Lock()
	if g.keys == nil {
		g.keys = map[string]*gateKey{}
	}
	k := g.keys[key]
	if k == nil {
		k = &gateKey{moved: make(chan struct{})}
		g.keys[key] = k
	}
	if !k.held {
		k.held = true
		g.mu.Unlock()
		return func() { g.pass(key, k) }, nil
	}
	turn := make(chan struct{}, 1)
	k.queue = append(k.queue, turn)
	moved := k.moved
	g.mu.Unlock()
	still := time.NewTimer(patience)
	defer still.Stop()
	for {
		select {
		case <-turn:
			return func() { g.pass(key, k) }, nil
		case <-moved:
			g.mu.Lock()
			moved = k.moved
			g.mu.Unlock()
			still.Reset(patience)
		case <-still.C:
			g.giveUp(key, k, turn)
			return func() {}, nil
		case <-ctx.Done():
			g.giveUp(key, k, turn)
			return nil, ctx.Err()
		}
	}
}

// Busy reports whether a caller holds key's turn now: one entering would
// wait.
func (g *Gate) Busy(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := g.keys[key]
	return k != nil && k.held
}

// pass hands key's turn to the first caller waiting, or frees it, and
// tells the waiters it moved.
func (g *Gate) pass(key string, k *gateKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(k.moved)
	k.moved = make(chan struct{})
	if len(k.queue) > 0 {
		next := k.queue[0]
		k.queue = k.queue[1:]
		next <- struct{}{} // buffered: never blocks
		return
	}
	k.held = false
	delete(g.keys, key)
}

// giveUp takes a caller that stops waiting out of key's queue; if the
// turn was handed to it meanwhile, it passes the turn on.
func (g *Gate) giveUp(key string, k *gateKey, turn chan struct{}) {
	g.mu.Lock()
	for i, t := range k.queue {
		if t == turn {
			k.queue = append(k.queue[:i], k.queue[i+1:]...)
			g.mu.Unlock()
			return
		}
	}
	g.mu.Unlock()
	<-turn
	g.pass(key, k)
}

// waiting reports how many keys are held or waited for (for tests).
func (g *Gate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.keys)
}
