//go:build regions

package regions

import (
	"context"
	"math/rand/v2"
	"syscall"
	"time"

	"shelf/tests/internal/checker"
)

// nemesis takes turns until ctx ends, each on a whole cluster after 3-6
// healthy seconds: the link between the data centres slowed (delay each
// way for 10-15 s), then one data centre hung (its node stopped with
// SIGSTOP for 4-8 s, then resumed). Each is a fault event in the history
// spanning its window.
type nemesis struct {
	c     *cluster
	h     *checker.History
	delay time.Duration
	errs  []error
}

func (n *nemesis) run(ctx context.Context) {
	for i := 0; ; i++ {
		sleep(ctx, time.Duration(3000+rand.IntN(3000))*time.Millisecond)
		if ctx.Err() != nil {
			return
		}
		if err := n.c.whole(ctx); err != nil {
			if ctx.Err() == nil {
				n.errs = append(n.errs, err)
			}
			continue
		}
		if i%2 == 0 {
			n.slowLink(ctx)
		} else {
			n.hangDC(ctx)
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (n *nemesis) slowLink(ctx context.Context) {
	start := time.Now()
	for _, link := range n.c.links {
		link.SetDelay(n.delay)
	}
	sleep(ctx, time.Duration(10000+rand.IntN(5000))*time.Millisecond)
	for _, link := range n.c.links {
		link.SetDelay(0)
	}
	n.h.Add(checker.Event{Kind: "fault", Op: "slow-link", Start: start, End: time.Now(),
		Args: map[string]string{"delay": n.delay.String()}})
}

func (n *nemesis) hangDC(ctx context.Context) {
	i := rand.IntN(len(n.c.Nodes))
	node, start := n.c.Nodes[i], time.Now()
	if err := n.c.L.Signal(node, syscall.SIGSTOP); err != nil {
		n.errs = append(n.errs, err)
		return
	}
	sleep(ctx, time.Duration(4000+rand.IntN(4000))*time.Millisecond)
	if err := n.c.L.Signal(node, syscall.SIGCONT); err != nil {
		n.errs = append(n.errs, err)
	}
	n.h.Add(checker.Event{Kind: "fault", API: i, Op: "hang-dc", Start: start, End: time.Now(),
		Args: map[string]string{"dc": node.DC, "node": node.Address}})
}
