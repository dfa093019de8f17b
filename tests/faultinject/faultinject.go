// Package faultinject decorates the repository's Sender (repository.DB
// sends every write through one) to inject the faults of the fault rule
// (docs/design/faults.md) by statement name: an answer lost after the
// statement applied, a send that fails, an attempt or a write held back
// as a hung node's queue holds it, to land later. Tests only: production
// builds never import it (TestShippedCodeLinksNoProof), and the
// stores' own paths carry no fault hook.
package faultinject

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"shelf/repository"
)

// Point says where a fault is injected.
type Point int

// The fault points around one lightweight transaction's attempt and one
// plain write.
const (
	// BeforeLWT: the attempt is not sent; a non-nil error is its answer.
	BeforeLWT Point = iota
	// AfterLWT: the attempt ran; a non-nil error replaces its answer, as
	// when the answer is lost or times out after Cassandra applied it.
	AfterLWT
	// BeforeWrite and AfterWrite are the same around a plain (not
	// conditional) write or a batch, named like "users_by_status.delete".
	BeforeWrite
	AfterWrite
)

// Func injects faults into lightweight transactions and plain writes by
// name (e.g. "usernames.claim", "users.activate",
// "suspended_users.delete"). Tests use it to prove that ambiguous outcomes
// are resolved (U5) and that a failed step is finished by its retry.
type Func func(stmt string, at Point) error

// Returned by a Func at BeforeLWT, these hold the attempt back as a hung
// node holds a request in its queue: the caller gets a timeout at once,
// and the statement lands later. ErrLandLate lands it just before the
// transaction's next attempt (after the SERIAL read-back), or right after
// the answer when there is none; ErrLandAfterAnswer only after the answer.
var (
	ErrLandLate        = errors.New("fault: attempt held back; it lands before the next attempt")
	ErrLandAfterAnswer = errors.New("fault: attempt held back; it lands after the answer")
)

// ErrHoldWrite, returned by a Func at BeforeWrite, holds a plain write back
// as a hung node's queue does: the caller gets a timeout at once (its
// outcome unknown), and the statement lands, with the timestamp it was
// sent with, only when LandHeld runs, at the moment the test picks.
// Returned at BeforeLWT it holds that attempt of a lightweight transaction
// the same way: the transaction goes on as after a timeout (a SERIAL read,
// another attempt), and the held attempt lands, its condition decided
// then, only when LandHeld runs (after a background process acted, say).
var ErrHoldWrite = errors.New("fault: write held back; it lands when LandHeld runs")

// Injector is a repository.Sender that injects the faults its Func says,
// around the Sender it wraps. Without a Func it only sends.
type Injector struct {
	next repository.Sender
	// faults is the Func (Set); atomic: background work (a mark cleared
	// after the answer) may send while a test swaps it.
	faults atomic.Pointer[Func]
	// late counts the finished transactions whose attempts held back by
	// ErrLandLate or ErrLandAfterAnswer are still landing (Done lands
	// them in a goroutine of its own).
	late sync.WaitGroup
	// held are writes and attempts held back by ErrHoldWrite, to land when
	// LandHeld runs.
	heldMu sync.Mutex
	held   []heldWrite
}

// heldWrite is a write held back by ErrHoldWrite: land sends it (a plain
// write with the timestamp it was first sent with, or an attempt of a
// lightweight transaction, whose condition decides then).
type heldWrite struct {
	name string
	land func(ctx context.Context) error
}

// Install decorates db's Sender with a new Injector and returns it; call
// it before the stores send anything (right after building the DB or the
// app).
func Install(db *repository.DB) *Injector {
	inj := &Injector{}
	db.Decorate(func(next repository.Sender) repository.Sender {
		inj.next = next
		return inj
	})
	return inj
}

// Set installs f as the Func (nil removes it).
func (inj *Injector) Set(f Func) {
	if f == nil {
		inj.faults.Store(nil)
		return
	}
	inj.faults.Store(&f)
}

// fault is the Func's answer at point (nil without a Func).
func (inj *Injector) fault(name string, at Point) error {
	if f := inj.faults.Load(); f != nil {
		return (*f)(name, at)
	}
	return nil
}

// hold keeps land for LandHeld.
func (inj *Injector) hold(name string, land func(ctx context.Context) error) {
	inj.heldMu.Lock()
	inj.held = append(inj.held, heldWrite{name: name, land: land})
	inj.heldMu.Unlock()
}

// LandHeld lands every write held back by ErrHoldWrite, in the order they
// were sent.
func (inj *Injector) LandHeld(ctx context.Context) error {
	inj.heldMu.Lock()
	held := inj.held
	inj.held = nil
	inj.heldMu.Unlock()
	for _, h := range held {
		if err := h.land(ctx); err != nil {
			return fmt.Errorf("%s: %w", h.name, err)
		}
	}
	return nil
}

// WaitLate waits until every attempt held back by ErrLandLate or
// ErrLandAfterAnswer in a transaction that has had its answer (Done) has
// landed.
func (inj *Injector) WaitLate() { inj.late.Wait() }

// Write sends w unless the Func fails or holds it.
func (inj *Injector) Write(ctx context.Context, w repository.Write) error {
	if err := inj.fault(w.Name, BeforeWrite); errors.Is(err, ErrHoldWrite) {
		sent := time.Now().UnixMicro()
		inj.hold(w.Name, func(ctx context.Context) error { return w.SendAt(ctx, sent) })
		return gocql.ErrTimeoutNoResponse
	} else if err != nil {
		return err
	}
	if err := inj.next.Write(ctx, w); err != nil {
		return err
	}
	return inj.fault(w.Name, AfterWrite)
}

// Batch sends a batch unless the Func fails it (a batch is never held).
func (inj *Injector) Batch(name string, send func() error) error {
	if err := inj.fault(name, BeforeWrite); err != nil {
		return err
	}
	if err := inj.next.Batch(name, send); err != nil {
		return err
	}
	return inj.fault(name, AfterWrite)
}

// Begin starts a transaction whose attempts meet the Func.
func (inj *Injector) Begin(name string) repository.Transaction {
	return &transaction{inj: inj, name: name, next: inj.next.Begin(name)}
}

// transaction is one lightweight transaction under the Injector: its
// attempts held back by ErrLandLate or ErrLandAfterAnswer land before the
// next attempt or after the answer.
type transaction struct {
	inj  *Injector
	name string
	next repository.Transaction
	late []lateAttempt
}

// lateAttempt is an attempt held back by a fault, to land later.
type lateAttempt struct {
	land        func()
	afterAnswer bool
}

// Attempt lands the attempts held back until now (ErrLandLate), then sends
// this one through the Func.
func (tx *transaction) Attempt(ctx context.Context, run func(context.Context) (bool, error)) (bool, error) {
	tx.late = slices.DeleteFunc(tx.late, func(h lateAttempt) bool {
		if !h.afterAnswer {
			h.land() // it lands before the next attempt is sent
		}
		return !h.afterAnswer
	})
	err := tx.inj.fault(tx.name, BeforeLWT)
	switch {
	case errors.Is(err, ErrLandLate) || errors.Is(err, ErrLandAfterAnswer):
		land := func() { _, _ = run(context.Background()) }
		tx.late = append(tx.late, lateAttempt{land: land, afterAnswer: errors.Is(err, ErrLandAfterAnswer)})
		return false, gocql.ErrTimeoutNoResponse
	case errors.Is(err, ErrHoldWrite):
		tx.inj.hold(tx.name, func(ctx context.Context) error {
			_, err := run(ctx)
			return err
		})
		return false, gocql.ErrTimeoutNoResponse
	case err != nil:
		return false, err
	}
	applied, err := tx.next.Attempt(ctx, run)
	if ferr := tx.inj.fault(tx.name, AfterLWT); ferr != nil {
		return false, ferr
	}
	return applied, err
}

// Done lets the attempts still held land after the answer, as a hung
// node's queue does once it resumes.
func (tx *transaction) Done() {
	tx.next.Done()
	if len(tx.late) == 0 {
		return
	}
	late := tx.late
	tx.inj.late.Add(1)
	go func() {
		defer tx.inj.late.Done()
		for _, h := range late {
			h.land()
		}
	}()
}
