package nemesis

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"
)

// event is one line of the history: a request and its answer, or a fault.
// Status 0 is no answer at all (timeout, connection refused): like a 503,
// indeterminate.
type event struct {
	Seq    int64             `json:"seq"`
	Kind   string            `json:"kind"` // "op" or "fault"
	Worker int               `json:"worker,omitempty"`
	API    int               `json:"api"`
	Op     string            `json:"op"`
	Args   map[string]string `json:"args,omitempty"`
	Start  time.Time         `json:"start"`
	End    time.Time         `json:"end"`
	Status int               `json:"status,omitempty"`
	Code   string            `json:"code,omitempty"`   // problem code
	Fields []string          `json:"fields,omitempty"` // the problem's fields at fault
	Result map[string]string `json:"result,omitempty"`
	// Session labels the session the request used (sessionLabel of its
	// bearer token; "" anonymous); a login's Result["session"] labels the
	// session it opened.
	Session string `json:"session,omitempty"`
}

// sessionLabel names a bearer token or a mailed token in the history
// without writing the credential itself down.
func sessionLabel(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// indeterminate reports an answer that says nothing of the outcome.
func (e event) indeterminate() bool {
	return e.Status == 0 || e.Status == http.StatusServiceUnavailable
}

// ok reports an answer that says the request applied.
func (e event) ok() bool { return e.Status >= 200 && e.Status < 300 }

// verdict is one invariant's outcome, with counter-examples.
type verdict struct {
	name       string
	checked    int
	violations []string
}

func (v *verdict) fail(format string, args ...any) {
	v.violations = append(v.violations, fmt.Sprintf(format, args...))
}

func (v verdict) String() string {
	if len(v.violations) == 0 {
		return fmt.Sprintf("%-44s PASS (%d checked)", v.name, v.checked)
	}
	out := fmt.Sprintf("%-44s FAIL (%d of %d)", v.name, len(v.violations), v.checked)
	for i, s := range v.violations {
		if i == 10 {
			out += fmt.Sprintf("\n    ... %d more", len(v.violations)-10)
			break
		}
		out += "\n    " + s
	}
	return out
}

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
