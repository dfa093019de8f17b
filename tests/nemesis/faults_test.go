//go:build nemesis

package nemesis

import (
	"context"
	"math/rand/v2"
	"syscall"
	"time"
)

// nemesis injects one fault at a time until ctx ends: a node killed
// (SIGKILL) and restarted, a node hung (SIGSTOP 2-8 s, then SIGCONT), or
// an API process killed in the middle of requests and restarted. Each is
// recorded in the history as a fault event spanning its window.
type nemesis struct {
	c    *cluster
	apis []*apiProc
	h    *history
	// kinds are the faults to inject (all four when empty: kill-node,
	// hang-node, hang-majority, kill-api).
	kinds []string
	errs  []error
	// unsettled are the single-node faults skipped because the cluster
	// did not settle first.
	unsettled []error
	// settledIn is the slowest settling read before the fault that starts
	// next, for its record.
	settledIn time.Duration
}

func (n *nemesis) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(3000+rand.IntN(4000)) * time.Millisecond):
		}
		kinds := n.kinds
		if len(kinds) == 0 {
			kinds = []string{"kill-node", "hang-node", "hang-majority", "kill-api"}
		}
		kind := kinds[rand.IntN(len(kinds))]
		// A single-node fault starts on a settled cluster (see settled):
		// whole, and no node still slow from a restart or a hang. The
		// seconds spent waiting for it are ordinary healthy seconds; a
		// cluster that does not settle skips the fault, counted in the
		// summary.
		if kind == "kill-node" || kind == "hang-node" {
			slowest, err := n.c.settled(ctx)
			if err != nil {
				if ctx.Err() == nil {
					n.unsettled = append(n.unsettled, err)
				}
				continue
			}
			n.settledIn = slowest
		}
		switch kind {
		case "kill-node":
			n.killNode(ctx)
		case "hang-node":
			n.hangNode(ctx)
		case "hang-majority":
			n.hangMajority(ctx)
		default:
			n.killAPI(ctx)
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

func (n *nemesis) record(op string, target int, start time.Time, args map[string]string) {
	n.h.Add(event{Kind: "fault", API: target, Op: op, Start: start, End: time.Now(), Args: args})
}

func (n *nemesis) killNode(ctx context.Context) {
	i := rand.IntN(len(n.c.Nodes))
	node, start := n.c.Nodes[i], time.Now()
	if err := n.c.L.Signal(node, syscall.SIGKILL); err != nil {
		n.errs = append(n.errs, err)
		return
	}
	sleep(ctx, time.Duration(3000+rand.IntN(5000))*time.Millisecond)
	// Restarting takes tens of seconds on two cores; the cluster serves
	// on two nodes meanwhile. The restart runs even past the deadline.
	restarting := time.Now()
	restart, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if err := n.c.L.Start(restart, node); err != nil {
		n.errs = append(n.errs, err)
	}
	n.record("kill-node", i, start, map[string]string{"node": node.Address, "restart": restarting.Format(time.RFC3339Nano), "settled": n.settledIn.String()})
}

func (n *nemesis) hangNode(ctx context.Context) {
	i := rand.IntN(len(n.c.Nodes))
	node, start := n.c.Nodes[i], time.Now()
	if err := n.c.L.Signal(node, syscall.SIGSTOP); err != nil {
		n.errs = append(n.errs, err)
		return
	}
	sleep(ctx, time.Duration(2000+rand.IntN(6000))*time.Millisecond)
	if err := n.c.L.Signal(node, syscall.SIGCONT); err != nil {
		n.errs = append(n.errs, err)
	}
	n.record("hang-node", i, start, map[string]string{"node": node.Address, "settled": n.settledIn.String()})
}

// hangMajority hangs two of the three nodes at once for 4-12 s: no
// quorum, so compare-and-sets and the SERIAL reads that settle them time
// out, and a request whose deadline (10 s) passes first answers 503 with
// its outcome unknown; attempts queued at the hung nodes land when they
// resume.
func (n *nemesis) hangMajority(ctx context.Context) {
	spared := rand.IntN(len(n.c.Nodes))
	start := time.Now()
	var hung []int
	for i, node := range n.c.Nodes {
		if i == spared {
			continue
		}
		if err := n.c.L.Signal(node, syscall.SIGSTOP); err != nil {
			n.errs = append(n.errs, err)
			continue
		}
		hung = append(hung, i)
	}
	sleep(ctx, time.Duration(4000+rand.IntN(8000))*time.Millisecond)
	for _, i := range hung {
		if err := n.c.L.Signal(n.c.Nodes[i], syscall.SIGCONT); err != nil {
			n.errs = append(n.errs, err)
		}
	}
	n.record("hang-majority", spared, start, map[string]string{"spared": n.c.Nodes[spared].Address})
}

func (n *nemesis) killAPI(ctx context.Context) {
	i := rand.IntN(len(n.apis))
	start := time.Now()
	n.apis[i].kill()
	sleep(ctx, time.Duration(500+rand.IntN(2500))*time.Millisecond)
	restart, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if err := n.apis[i].start(restart); err != nil {
		n.errs = append(n.errs, err)
	}
	n.record("kill-api", i, start, nil)
}
