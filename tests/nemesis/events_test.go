package nemesis

import (
	"time"

	"shelf/tests/internal/checker"
)

// The history's types are the checker's, shared with tests/regions; the
// short names keep this package's many checks readable.
type (
	event   = checker.Event
	verdict = checker.Verdict
	history = checker.History
	client  = checker.Client
)

// sweepSlack is how long after a suspension's end the sweepers (every 2 s,
// one process's clock 2 s ahead) have surely lifted it.
const sweepSlack = 10 * time.Second

// settled is when the background work the history started is over: not
// before floor, nor before sweepSlack after the latest end any suspend
// asked for (acknowledged or not: an unanswered one may still land).
func settled(events []event, floor time.Time) time.Time {
	at := floor
	for _, e := range events {
		if e.Op != "suspend" || e.Args["until"] == "" {
			continue
		}
		until, err := time.Parse(time.RFC3339, e.Args["until"])
		if err == nil && until.Add(sweepSlack).After(at) {
			at = until.Add(sweepSlack)
		}
	}
	return at
}
