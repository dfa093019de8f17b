package library

import (
	"context"
	"sync"
)

// pool runs the fan-outs that go on after the answer: Config.FanoutWorkers
// items at a time (each with FanoutConcurrency writers), at most
// Config.FanoutQueue items waiting.
// A change of an item that is already waiting joins it (coalesced: only
// the newest version is written, and every change's mark is done once it
// is); one of an item being fanned out waits behind it, so one item never
// has two fan-outs at once. When the queue is full, or the pool is
// closing, a change is left to the outbox: its mark stays and the worker
// redoes it after the grace. Nothing here is durable, nothing needs to
// be: the marks are. A worker is started for a queued item while fewer
// than FanoutWorkers run, through Config.Background (a goroutine in the
// server), and ends when nothing is left that it may take.
type pool struct {
	s       *Service
	workers int
	max     int

	mu      sync.Mutex
	waiting map[string]*job // by item, not started
	queue   []string        // the waiting items, oldest first
	running map[string]bool // items being fanned out
	started int             // workers running
	closed  bool
	idle    *sync.Cond // signalled whenever a job ends

	ctx    context.Context // the fan-outs'; cancelled when Close gives up
	cancel context.CancelFunc
}

// job is one item's waiting fan-out.
type job struct {
	next Content
	// prev is what the libraries held, when known; nil once changes were
	// coalesced (each member's index entry says).
	prev    *Content
	markers []string
}

func newPool(s *Service, workers, max int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{s: s, workers: workers, max: max, waiting: map[string]*job{}, running: map[string]bool{},
		ctx: ctx, cancel: cancel}
	p.idle = sync.NewCond(&p.mu)
	return p
}

// add queues a fan-out; false when it is left to the outbox.
func (p *pool) add(next Content, prev *Content, marker string) bool {
	taken, start := p.enqueue(next, prev, marker)
	if start {
		// Outside the lock: a runner may run the worker before it returns.
		p.s.cfg.Background(p.work)
	}
	return taken
}

// enqueue queues a fan-out (taken false: left to the outbox) and says
// whether a worker is to be started for it.
func (p *pool) enqueue(next Content, prev *Content, marker string) (taken, start bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.observe(leftToOutbox)
		return false, false
	}
	if j := p.waiting[next.ID]; j != nil {
		if next.Version > j.next.Version {
			j.next = next
		}
		j.prev = nil
		j.markers = append(j.markers, marker)
		p.observe(coalesced)
		return true, false
	}
	if len(p.waiting) >= p.max {
		p.observe(leftToOutbox)
		return false, false
	}
	p.waiting[next.ID] = &job{next: next, prev: prev, markers: []string{marker}}
	p.queue = append(p.queue, next.ID)
	p.observe(queued)
	if p.started < p.workers {
		p.started++
		return true, true
	}
	return true, false
}

// take removes the oldest waiting item that is not being fanned out.
func (p *pool) take() (string, *job, bool) {
	for i, id := range p.queue {
		if p.running[id] {
			continue
		}
		j := p.waiting[id]
		delete(p.waiting, id)
		p.queue = append(p.queue[:i:i], p.queue[i+1:]...)
		p.running[id] = true
		return id, j, true
	}
	return "", nil, false
}

// work fans out waiting items until none is left that it may take. An
// item waiting behind its own fan-out is not: the worker running that
// one goes on taking once it ends, so no item is ever left without a
// worker.
func (p *pool) work() {
	for {
		p.mu.Lock()
		id, j, ok := p.take()
		if !ok {
			p.started--
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		p.run(j)
		p.mu.Lock()
		delete(p.running, id)
		p.observe(finished)
		p.idle.Broadcast()
		p.mu.Unlock()
	}
}

// run fans one job out and, when every library has it, does its marks.
func (p *pool) run(j *job) {
	ctx := p.ctx
	if err := p.s.fanout(ctx, j.next, j.prev); err != nil {
		p.s.log.Warn(ctx, "fan-out stopped; the outbox worker will finish it", "content", j.next.ID, "error", err.Error())
		return
	}
	for _, m := range j.markers {
		_ = p.s.outbox.Done(context.WithoutCancel(ctx), j.next.ID, m)
	}
}

// close stops taking fan-outs and waits for those under way until ctx
// ends; then it stops them. What did not finish, and what was waiting,
// keeps its marks: an outbox worker redoes it (see Service.Close). It
// returns how many items were left so.
func (p *pool) close(ctx context.Context) int {
	p.mu.Lock()
	p.closed = true
	left := len(p.waiting)
	p.waiting, p.queue = map[string]*job{}, nil
	p.observe(finished)
	stop := context.AfterFunc(ctx, func() {
		p.cancel()
		p.mu.Lock()
		p.idle.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	for len(p.running) > 0 && ctx.Err() == nil {
		p.idle.Wait()
	}
	left += len(p.running)
	p.mu.Unlock()
	p.cancel()
	return left
}

// poolEvent is what the pool tells the metrics.
type poolEvent int

const (
	queued poolEvent = iota
	coalesced
	leftToOutbox
	finished
)

// observe reports an event and the queue's depth (with p.mu held).
func (p *pool) observe(e poolEvent) {
	if p.s.cfg.ObservePool != nil {
		p.s.cfg.ObservePool(PoolEvent{Coalesced: e == coalesced, LeftToOutbox: e == leftToOutbox, Waiting: len(p.waiting), Running: len(p.running)})
	}
}

// PoolEvent is one change of the background fan-out queue (metrics).
type PoolEvent struct {
	// Coalesced: a change joined its item's waiting fan-out.
	Coalesced bool
	// LeftToOutbox: a change was not queued (the queue was full, or the
	// process is stopping); the outbox worker will do it.
	LeftToOutbox bool
	// Waiting and Running are the items queued and being fanned out.
	Waiting, Running int
}
