package repository

import (
	"context"
)

// Sender sends what the stores write: every attempt of a lightweight
// transaction, every plain write, every batch. The DB sends them itself
// (its Sender does nothing but send); a test decorates it (DB.Decorate) to
// lose answers, fail sends or hold writes back the way a hung node does
// (tests/faultinject), and a deliberately broken build decorates it to
// leave ambiguous answers unread (tests/broken). What the stores send
// and how exec settles an answer are the same either way.
type Sender interface {
	// Begin starts one lightweight transaction named name (e.g.
	// "usernames.claim"): exec sends its attempts through the Transaction
	// returned, and calls Done once when it has its answer.
	Begin(name string) Transaction
	// Write sends one plain write.
	Write(ctx context.Context, w Write) error
	// Batch sends one batch of plain writes named name (send sends it).
	Batch(name string, send func() error) error
}

// Transaction sends the attempts of one lightweight transaction.
type Transaction interface {
	// Attempt sends one attempt (run sends it and reports whether it
	// applied) and returns its answer.
	Attempt(ctx context.Context, run func(context.Context) (bool, error)) (bool, error)
	// Done: the transaction has its answer; nothing more is sent for it.
	Done()
}

// Write is one plain write, ready to send.
type Write struct {
	// Name says which write it is, for errors and decorators: the table
	// and the operation ("users_by_status.delete").
	Name string
	send func(ctx context.Context, timestamp int64) error
}

// Send sends the write at the driver's timestamp.
func (w Write) Send(ctx context.Context) error { return w.send(ctx, 0) }

// SendAt sends the write with the timestamp given (microseconds since the
// epoch): a write held back lands with the timestamp it was first sent
// with, as a hung node's queue would land it.
func (w Write) SendAt(ctx context.Context, timestamp int64) error { return w.send(ctx, timestamp) }

// Decorate wraps the DB's Sender in wrap's; call it before the stores
// send anything (a test, right after building the DB or the app).
func (db *DB) Decorate(wrap func(Sender) Sender) { db.sender = wrap(db.sender) }

// direct is the DB's own Sender: it sends.
type direct struct{}

func (direct) Begin(string) Transaction                 { return directTransaction{} }
func (direct) Write(ctx context.Context, w Write) error { return w.Send(ctx) }
func (direct) Batch(_ string, send func() error) error  { return send() }

type directTransaction struct{}

func (directTransaction) Attempt(ctx context.Context, run func(context.Context) (bool, error)) (bool, error) {
	return run(ctx)
}

func (directTransaction) Done() {}
