// Package checker is what the cluster tests share to judge a run (the
// nemesis in tests/nemesis, two data centres in tests/regions): the
// history of requests and answers, the client that writes it, and the
// checks of the invariants that hold whatever the workload was: U1 per key
// with porcupine and on the tables, U3 for every 201 signup, S2 through
// the repair's dry run, and no 5xx other than 503.
package checker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"
)

// Event is one line of the history: a request and its answer, or a fault.
// Status 0 is no answer at all (timeout, connection refused): like a 503,
// indeterminate.
type Event struct {
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
	// Session labels the session the request used (SessionLabel of its
	// bearer token; "" anonymous); a login's Result["session"] labels the
	// session it opened.
	Session string `json:"session,omitempty"`
}

// SessionLabel names a bearer token or a mailed token in the history
// without writing the credential itself down.
func SessionLabel(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// Indeterminate reports an answer that says nothing of the outcome.
func (e Event) Indeterminate() bool {
	return e.Status == 0 || e.Status == http.StatusServiceUnavailable
}

// OK reports an answer that says the request applied.
func (e Event) OK() bool { return e.Status >= 200 && e.Status < 300 }

// Verdict is one invariant's outcome, with counter-examples.
type Verdict struct {
	Name       string
	Checked    int
	Violations []string
}

// Fail adds a counter-example.
func (v *Verdict) Fail(format string, args ...any) {
	v.Violations = append(v.Violations, fmt.Sprintf(format, args...))
}

func (v Verdict) String() string {
	if len(v.Violations) == 0 {
		return fmt.Sprintf("%-44s PASS (%d checked)", v.Name, v.Checked)
	}
	out := fmt.Sprintf("%-44s FAIL (%d of %d)", v.Name, len(v.Violations), v.Checked)
	for i, s := range v.Violations {
		if i == 10 {
			out += fmt.Sprintf("\n    ... %d more", len(v.Violations)-10)
			break
		}
		out += "\n    " + s
	}
	return out
}

// Deletions says, per account, whether a deletion of it answered 2xx
// ("yes") or may have applied ("maybe": no answer or a 503).
func Deletions(events []Event) map[string]string {
	return Outcomes(events, "delete-account", "user", map[string]string{})
}

// Outcomes adds to out, for the target (Args[arg]) of every op, "yes" when
// one answered 2xx and "maybe" when one may have applied.
func Outcomes(events []Event, op, arg string, out map[string]string) map[string]string {
	for _, e := range events {
		if e.Op != op {
			continue
		}
		switch id := e.Args[arg]; {
		case e.OK():
			out[id] = "yes"
		case e.Indeterminate() && out[id] == "":
			out[id] = "maybe"
		}
	}
	return out
}

// SweepSlack is how long after a suspension's end the sweepers (every 2 s,
// with a clock up to 2 s ahead) have surely lifted it.
const SweepSlack = 10 * time.Second

// Settled is when the background work the history started is over: not
// before floor, nor before SweepSlack after the latest end any suspend
// asked for (acknowledged or not: an unanswered one may still land).
func Settled(events []Event, floor time.Time) time.Time {
	at := floor
	for _, e := range events {
		if e.Op != "suspend" || e.Args["until"] == "" {
			continue
		}
		until, err := time.Parse(time.RFC3339, e.Args["until"])
		if err == nil && until.Add(SweepSlack).After(at) {
			at = until.Add(SweepSlack)
		}
	}
	return at
}
