package nemesis

import (
	"fmt"
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
}

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
