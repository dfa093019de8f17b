package repository

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
)

// TestDriverErrorsAreClassified: an error after which a write may have
// been sent is ambiguous (settled by a read-back, never taken for "not
// applied") and answers 503, never 500 — among them a connection the
// driver closed after a failed heartbeat while the node hung and a
// cancelled request (docs/design/faults.md#attempts). An error Cassandra answered
// before running anything is not ambiguous.
func TestDriverErrorsAreClassified(t *testing.T) {
	t.Parallel()
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		err         error
		ambiguous   bool
		unavailable bool
	}{
		{fmt.Errorf("gocql: heartbeat failed"), true, true},
		{io.EOF, true, true},
		{reset, true, true},
		{context.Canceled, true, true},
		{context.DeadlineExceeded, true, true},
		{gocql.ErrTimeoutNoResponse, true, true},
		{gocql.ErrTooManyTimeouts, true, true}, // bench-degraded: answered 500 after a slow node
		{&gocql.RequestErrWriteTimeout{WriteType: "CAS"}, true, true},
		{&gocql.RequestErrUnavailable{}, false, true},
		// A read through an index a replica still builds: try again later.
		{&gocql.RequestErrReadFailure{ErrorMap: gocql.ErrorMap{"127.0.0.1": 6}}, false, true},
		// A read that met too many tombstones will meet them again.
		{&gocql.RequestErrReadFailure{ErrorMap: gocql.ErrorMap{"127.0.0.1": 1}}, false, false},
		// Paxos v2's answer when a replica dropped its part past the
		// timeout (a paused node): a write may have applied elsewhere.
		{&gocql.RequestErrWriteFailure{WriteType: "CAS", ErrorMap: gocql.ErrorMap{"127.0.0.1": 2}}, true, true},
		{&gocql.RequestErrReadFailure{ErrorMap: gocql.ErrorMap{"127.0.0.1": 2}}, false, true},
		{&gocql.RequestErrWriteFailure{ErrorMap: gocql.ErrorMap{"127.0.0.1": 5}}, true, true},
		// A write refused for its schema will be refused again.
		{&gocql.RequestErrWriteFailure{ErrorMap: gocql.ErrorMap{"127.0.0.1": 3}}, false, false},
		{gocql.ErrNoConnections, false, true},
		{errors.New("line 1:7 no viable alternative"), false, false},
	} {
		if got := Ambiguous(tc.err); got != tc.ambiguous {
			t.Errorf("%v: ambiguous %v, want %v", tc.err, got, tc.ambiguous)
		}
		if got := errors.Is(dbErr("x", tc.err), domain.ErrUnavailable); got != tc.unavailable {
			t.Errorf("%v: unavailable %v, want %v", tc.err, got, tc.unavailable)
		}
	}
}

// TestMigrationTimeoutsAreTriedAgain: gocqlx's migrate wraps the driver's
// error as text; Migrate must still tell a timeout (try again: the run
// resumes after its last statement) from any other failure (stop).
func TestMigrationTimeoutsAreTriedAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("apply migration \"010.cql\": statement 1: %s", gocql.ErrTimeoutNoResponse), true},
		{errors.New("list migrations: Operation timed out - received only 0 responses."), true},
		{errors.New("statement 2: line 1:7 no viable alternative at input 'TABLE'"), false},
		{errors.New("checksum mismatch for 003_moderation.cql"), false},
	} {
		if got := migrationTimedOut(c.err); got != c.want {
			t.Errorf("migrationTimedOut(%q) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestACompareAndSetAnsweredAfterItsProposalIsReadBack: a coordinator can
// fail a compare-and-set after a quorum accepted its proposal, and the
// next Paxos round (the SERIAL read itself) then commits it. Paxos v1
// checks the replicas up for the commit at the statement's consistency
// (Unavailable at LOCAL_QUORUM) and the hints in flight to each
// (Overloaded), and a replica failing the commit (v1) or the proposal
// (v2) answers a write failure of any reason. Taken for "not applied",
// a change of username gave back its claims while the account took the
// name (accounts' writeWithClaims: "answered, and not applied"), and the
// next signup took it too (U1). Each is read back; only an Unavailable
// at a serial consistency (before the Paxos round) and a refusal while
// shutting down are answers.
func TestACompareAndSetAnsweredAfterItsProposalIsReadBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		err      error
		readBack bool
	}{
		{"unavailable for the commit (v1)", &gocql.RequestErrUnavailable{Consistency: gocql.LocalQuorum, Required: 2, Alive: 1}, true},
		{"too many hints in flight for the commit (v1)", serverError{gocql.ErrCodeOverloaded, "Too many in flight hints: 1025  destination: /127.0.0.3 destination hints 12"}, true},
		{"a replica failed the commit (v1)", &gocql.RequestErrWriteFailure{WriteType: "SIMPLE", Consistency: gocql.LocalQuorum, ErrorMap: gocql.ErrorMap{"127.0.0.3": 0}}, true},
		{"a replica failed the proposal or the commit (v2)", &gocql.RequestErrWriteFailure{WriteType: "CAS", Consistency: gocql.LocalQuorum, ErrorMap: gocql.ErrorMap{"127.0.0.3": 0}}, true},
		{"unavailable for the Paxos round", &gocql.RequestErrUnavailable{Consistency: gocql.Consistency(gocql.Serial), Required: 2, Alive: 1}, false},
		{"unavailable for the local Paxos round", &gocql.RequestErrUnavailable{Consistency: gocql.Consistency(gocql.LocalSerial), Required: 2, Alive: 1}, false},
		{"refused unrun while shutting down", serverError{gocql.ErrCodeOverloaded, "Server is shutting down"}, false},
		{"refused as invalid", errors.New("line 1:7 no viable alternative"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := &DB{sender: direct{}, Attempt: time.Second}
			read := false
			applied, err := db.exec(context.Background(), lwt{
				name: "users.update",
				run:  func(context.Context) (bool, error) { return false, tc.err },
				resolve: func(context.Context) (bool, bool, error) {
					read = true
					return true, false, nil // the row holds our tag: the proposal was committed
				},
			})
			switch {
			case tc.readBack && (!read || err != nil || !applied):
				t.Fatalf("%T: read back %v, applied %v, %v; want read back and applied", tc.err, read, applied, err)
			case !tc.readBack && (read || err == nil || errors.Is(err, domain.ErrOutcomeUnknown)):
				t.Fatalf("%T: read back %v, %v; want the answer, not read back", tc.err, read, err)
			}
		})
	}
}
