package domain

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"
)

// Trips collects the statements one request sent to Cassandra (their start
// and end), to count the round trips the request waited for in turn: the
// longest chain of statements each sent after the one before it answered.
// Statements Parallel sends together count once even when a goroutine
// starts late and sends its statement after the other's answer: each goes
// out on a branch of the request's context, and a branch's first statement
// counts as sent when the branch was.
type Trips struct {
	mu    sync.Mutex
	spans []span
	// first holds the spans of most requests (a page is 2-5 statements),
	// so one allocation covers the lot.
	first [6]span
}

type span struct{ start, end time.Time }

type tripsKey struct{}

// CountTrips returns a context whose statements are collected in the
// returned Trips (through the statement observer, which calls RecordTrip).
func CountTrips(ctx context.Context) (context.Context, *Trips) {
	c := &tripsCtx{Context: ctx}
	c.t.spans = c.t.first[:0]
	return c, &c.t
}

// tripsCtx is a context and its Trips in one allocation (context.WithValue
// would take another).
type tripsCtx struct {
	context.Context
	t Trips
}

// Value is the Trips for tripsKey, and ctx's values otherwise.
func (c *tripsCtx) Value(key any) any {
	if key == (tripsKey{}) {
		return &c.t
	}
	return c.Context.Value(key)
}

// RecordTrip records one statement of the request ctx belongs to, if any.
// The first statement of a branch (together) counts from when the branch was
// sent: what kept it from going out at once was the scheduler, not an
// answer it waited for.
func RecordTrip(ctx context.Context, start, end time.Time) {
	t, _ := ctx.Value(tripsKey{}).(*Trips)
	if t == nil {
		return
	}
	b, _ := ctx.Value(branchKey{}).(*branch)
	t.mu.Lock()
	if b != nil && !b.sent {
		start = b.at
	}
	for ; b != nil && !b.sent; b = b.parent {
		b.sent = true
	}
	t.spans = append(t.spans, span{start, end})
	t.mu.Unlock()
}

// together returns n contexts of ctx for n branches of work sent at once
// (their statements go out together) at the time now, or nil when ctx
// counts no trips. Each branch counts as sent now, or, on a branch that
// has sent nothing yet, when that branch was: a goroutine started late is
// not a round trip.
func together(ctx context.Context, n int, now time.Time) []context.Context {
	t, _ := ctx.Value(tripsKey{}).(*Trips)
	if t == nil {
		return nil
	}
	parent, _ := ctx.Value(branchKey{}).(*branch)
	at := now
	t.mu.Lock()
	if parent != nil && !parent.sent {
		at = parent.at
	}
	t.mu.Unlock()
	branches := make([]branch, n)
	ctxs := make([]context.Context, n)
	for i := range branches {
		branches[i] = branch{Context: ctx, parent: parent, at: at}
		ctxs[i] = &branches[i]
	}
	return ctxs
}

// branch is a context for one of the branches together sent at once.
type branch struct {
	context.Context
	parent *branch   // the branch together was called on, if any
	at     time.Time // when the branch was sent
	sent   bool      // it (or a branch of it) has sent a statement; under the Trips' mu
}

type branchKey struct{}

// Value is the branch itself for branchKey, and ctx's values otherwise.
func (b *branch) Value(key any) any {
	if key == (branchKey{}) {
		return b
	}
	return b.Context.Value(key)
}

// Count is the number of sequential round trips: the longest chain of
// statements each of which started after the one before it ended (a
// statement sent beside another is not a round trip more; one sent after
// another's answer is).
func (t *Trips) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	slices.SortFunc(t.spans, func(a, b span) int { return a.start.Compare(b.start) })
	if len(t.spans) <= smallTrips {
		return smallCount(t.spans)
	}
	return heapCount(t.spans)
}

// heapCount is Count for spans in order of start: a statement's chain is
// one longer than the longest chain among those that ended before it
// started, which a heap of the chains still open by their end finds.
func heapCount(spans []span) int {
	var open endHeap
	ended, longest := 0, 0
	for _, s := range spans {
		for len(open) > 0 && open[0].end.Before(s.start) {
			ended = max(ended, heap.Pop(&open).(chain).depth)
		}
		heap.Push(&open, chain{end: s.end, depth: ended + 1})
		longest = max(longest, ended+1)
	}
	return longest
}

// smallTrips is up to how many statements smallCount counts: most
// requests send one to five.
const smallTrips = 16

// smallCount is Count for a few spans in order of start, without the
// heap (whose every push and pop allocates): a statement's chain is one
// longer than the longest among those that ended before it started, all
// of which come before it.
func smallCount(spans []span) int {
	var depth [smallTrips]int
	longest := 0
	for i, s := range spans {
		depth[i] = 1
		for j, before := range spans[:i] {
			if before.end.Before(s.start) {
				depth[i] = max(depth[i], depth[j]+1)
			}
		}
		longest = max(longest, depth[i])
	}
	return longest
}

// chain is a statement's end and the length of the longest chain it ends.
type chain struct {
	end   time.Time
	depth int
}

// endHeap orders chains by their end, earliest first.
type endHeap []chain

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].end.Before(h[j].end) }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(chain)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
