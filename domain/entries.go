package domain

import (
	"fmt"
	"time"
)

// EntryGrant bounds how long after its time an attempt's entry in an
// index of attempts in progress (deletions, closings, moderation,
// membership changes, jobs) may be acknowledged for the attempt to go on
// to what the entry announces: one and a half request deadlines
// (SHELF_REQUEST_TIMEOUT, 10 s; a longer deadline does not lengthen it),
// so only a write stalled past its request's end meets it. The index's
// reader keeps its start ClockSkew more behind now than this, so an entry acknowledged in time is read, however the
// reader's passes fall (docs/design/jobs.md#index-start).
const EntryGrant = 15 * time.Second

// ClockSkew is how far apart the processes' clocks may be, each other's
// and the nodes' (docs/design/jobs.md: keep them within it). An index's
// reader keeps its start this much more behind now than EntryGrant, and
// a revert counts "after its notice" this much before it.
const ClockSkew = 45 * time.Second

// Behind is the earlier of this process's clock (own) and a node's: what
// a reader takes for now when a clock running ahead must not move it past
// what the others still write, or read as ended what the node does not.
func Behind(own, node time.Time) time.Time {
	if node.Before(own) {
		return node
	}
	return own
}

// Entered is the outcome of writing the entry of an attempt begun at at,
// judged at now: the write's error, or ErrUnavailable if it was
// acknowledged more than EntryGrant after at (the reader may have passed
// it). The attempt goes on only on nil; otherwise it ends its entry and
// changes nothing.
func Entered(err error, at, now time.Time) error {
	if err == nil && now.Sub(at) > EntryGrant {
		return fmt.Errorf("the entry of an attempt begun at %s was acknowledged %s later, past %s: %w",
			at.UTC().Format(time.RFC3339Nano), now.Sub(at).Round(time.Millisecond), EntryGrant, ErrUnavailable)
	}
	return err
}

// Intent is one round of an admin's change of an account in an index of
// attempts in progress (accounts.Intents, moderation.AdminIntents): the
// account, the round's tag (its own: another's end never takes its
// entry) and when it began.
type Intent struct {
	UserID, Tag string
	At          time.Time
}
