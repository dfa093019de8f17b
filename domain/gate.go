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

// gateKey is one key's turn (a slot of one) and how many callers hold or
// wait for it: the key is forgotten when none do.
type gateKey struct {
	turn  chan struct{}
	users int
}

// Enter waits for key's turn, at most patience, and never past ctx's end
// (its error). A caller that ran out of patience goes on without the turn
// (leave is then a no-op): the holder may be stuck on a slow statement or
// held for a test, and nothing but load depends on the turns. leave gives
// the turn to the next caller; call it exactly once. patience 0 never
// waits.
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
		k = &gateKey{turn: make(chan struct{}, 1)}
		g.keys[key] = k
	}
	k.users++
	g.mu.Unlock()
	wait := time.NewTimer(patience)
	defer wait.Stop()
	select {
	case k.turn <- struct{}{}:
		return func() {
			<-k.turn
			g.done(key, k)
		}, nil
	case <-wait.C:
		g.done(key, k)
		return func() {}, nil
	case <-ctx.Done():
		g.done(key, k)
		return nil, ctx.Err()
	}
}

// done counts a caller out of key.
func (g *Gate) done(key string, k *gateKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if k.users--; k.users == 0 {
		delete(g.keys, key)
	}
}

// waiting reports how many keys have callers (for tests).
func (g *Gate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.keys)
}
