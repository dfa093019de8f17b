package repository

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

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
