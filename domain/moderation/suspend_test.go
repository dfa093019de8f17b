package moderation

import (
	"errors"
	"strings"
	"testing"
	"time"

	"shelf/domain"
)

// TestReasonRule: a suspension's reason follows the one rule of text
// people read: lines allowed, other invisible characters not, one code
// for its length whatever the length.
func TestReasonRule(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for in, code := range map[string]string{
		"spam\nsee the report":      "",
		"":                          "length",
		strings.Repeat("r", 501):    "length",
		strings.Repeat("r", 100000): "length",
		"spam\u3164":                "invalid_characters",
		"spam\u2028again":           "invalid_characters",
		"spam\a":                    "invalid_characters",
	} {
		reason, err := checkSuspend(SuspendInput{Reason: in}, now, "u_admin", "u_user")
		if code == "" {
			if err != nil || reason != in {
				t.Errorf("%q: %q, %v", in, reason, err)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "reason" || de.Fields[0].Code != code {
			t.Errorf("%.30q: %v, want reason %s", in, err, code)
		}
	}
}
