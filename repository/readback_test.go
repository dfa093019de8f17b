package repository

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
)

// TestAReadBackEndsWithTheCallersDeadline: the SERIAL read that settles an
// ambiguous answer outlives the caller's context by one attempt at most,
// never by resolveTimeout. Without a quorum that read never settles, and a
// signup whose compare-and-set timed out near its 10 s deadline waited up
// to 10 s more before answering 503 (docs/benchmarks.md, two nodes hung).
// It still gets one attempt when the caller's deadline is what ran out,
// and the whole resolveTimeout for a caller with no deadline (a worker).
func TestAReadBackEndsWithTheCallersDeadline(t *testing.T) {
	t.Parallel()
	const attempt = 300 * time.Millisecond
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: none
		// want is where the read-back's deadline lies, from the start.
		want func(start, caller time.Time) (from, to time.Time)
	}{
		{"the caller's deadline is further off: the read-back ends with it", time.Second,
			func(_, caller time.Time) (time.Time, time.Time) { return caller, caller }},
		{"the caller's deadline runs out first: the read-back gets one attempt", 20 * time.Millisecond,
			func(start, caller time.Time) (time.Time, time.Time) {
				return caller.Add(attempt / 2), start.Add(attempt + 50*time.Millisecond)
			}},
		{"no deadline: the read-back gets resolveTimeout", 0,
			func(start, _ time.Time) (time.Time, time.Time) {
				return start.Add(resolveTimeout - time.Second), start.Add(resolveTimeout + 50*time.Millisecond)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := &DB{sender: direct{}, Attempt: attempt}
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			start := time.Now()
			if tc.deadline > 0 {
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
			}
			defer cancel()
			caller, _ := ctx.Deadline()
			var readBack time.Time
			var outlived bool
			_, err := db.exec(ctx, lwt{
				name: "test.claim",
				run:  func(context.Context) (bool, error) { return false, gocql.ErrTimeoutNoResponse },
				resolve: func(rctx context.Context) (bool, bool, error) {
					readBack, _ = rctx.Deadline()
					if tc.deadline > 0 && tc.deadline < attempt {
						// The caller's context ends first; the read-back's
						// goes on, since that expiry is what left the
						// answer unknown.
						<-ctx.Done()
						outlived = rctx.Err() == nil
					}
					if tc.deadline == 0 {
						return true, false, nil // waiting its 10 s out proves nothing more
					}
					// No quorum: the read never settles.
					<-rctx.Done()
					return false, false, rctx.Err()
				},
			})
			switch {
			case tc.deadline == 0 && err != nil:
				t.Fatalf("a read-back that found the tag: %v", err)
			case tc.deadline > 0 && (!errors.Is(err, domain.ErrOutcomeUnknown) || !errors.Is(err, domain.ErrUnavailable)):
				t.Fatalf("a read-back that never settles: %v, want ErrOutcomeUnknown (503)", err)
			}
			from, to := tc.want(start, caller)
			if readBack.Before(from.Add(-50*time.Millisecond)) || readBack.After(to.Add(50*time.Millisecond)) {
				t.Fatalf("the read-back's deadline is %v after the start, want between %v and %v",
					readBack.Sub(start), from.Sub(start), to.Sub(start))
			}
			if tc.deadline > 0 && tc.deadline < attempt && !outlived {
				t.Fatal("the read-back ended with the caller's context, before its one attempt")
			}
		})
	}
}
