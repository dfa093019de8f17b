package nemesis

import "shelf/tests/internal/checker"

// The history's types are the checker's, shared with tests/regions; the
// short names keep this package's many checks readable.
type (
	event   = checker.Event
	verdict = checker.Verdict
	history = checker.History
	client  = checker.Client
)
