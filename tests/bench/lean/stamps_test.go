package lean

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestAnswersWriteTimesAsTheAPIDoes: every time in the baseline's answers
// has three fractional digits and Z, and the other fields are unchanged.
func TestAnswersWriteTimesAsTheAPIDoes(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 2, 340_000_000, time.FixedZone("x", 3600))
	until := at.Add(time.Hour)
	for _, v := range []any{
		Item{ID: "c_1", Name: "n", Visibility: "public", LastModified: at},
		Suspension{UserID: "u_1", Username: "ann", Reason: "r", SuspendedAt: at, SuspendedBy: "u_2", Until: &until},
		Session{Token: "t", ExpiresAt: at, User: User{CreatedAt: at}},
	} {
		b, err := json.Marshal(wireOf(v))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.Contains(s, "+01:00") || !strings.Contains(s, `"2026-10-31T23:00:02.340Z"`) {
			t.Errorf("%T: %s", v, s)
		}
		if strings.Count(s, `":"`) < 3 || strings.Contains(s, `"LastModified"`) || strings.Contains(s, `"SuspendedAt"`) {
			t.Errorf("%T lost or renamed a field: %s", v, s)
		}
	}
	b, _ := json.Marshal(wireOf(Suspension{SuspendedAt: at}))
	if strings.Contains(string(b), "until") {
		t.Errorf("a suspension without an end writes one: %s", b)
	}
}
