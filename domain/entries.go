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
// reader keeps its start 45 s more behind now than this (the clock skew
// it tolerates), so an entry acknowledged in time is read, however the
// reader's passes fall (docs/design/jobs.md#index-start).
const EntryGrant = 15 * time.Second

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
