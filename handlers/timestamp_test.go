package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"shelf/domain"
)

// TestTimestampsHaveMilliseconds (openapi.yaml's conventions): every time
// an answer carries is UTC with exactly three fractional digits, whatever
// the zone and precision of the time.Time behind it, so the strings sort
// as the times do; a problem's times (a suspended login's suspendedAt and
// until) are written the same way.
func TestTimestampsHaveMilliseconds(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 27, 10, 0, 2, 340_000_000, time.UTC), `"2026-11-27T10:00:02.340Z"`},
		{time.Date(2026, 11, 27, 10, 0, 2, 333_000_000, time.UTC), `"2026-11-27T10:00:02.333Z"`},
		{time.Date(2026, 11, 27, 10, 0, 2, 0, time.UTC), `"2026-11-27T10:00:02.000Z"`},
		{time.Date(2026, 11, 27, 10, 0, 2, 999_999_999, time.UTC), `"2026-11-27T10:00:02.999Z"`},
		{time.Date(2026, 11, 27, 11, 0, 2, 5_000_000, paris), `"2026-11-27T10:00:02.005Z"`},
	} {
		b, err := json.Marshal(stamp(c.in))
		if err != nil || string(b) != c.want {
			t.Errorf("%v: %s (%v), want %s", c.in, b, err, c.want)
		}
	}
	if optionalStamp(time.Time{}) != nil {
		t.Errorf("a zero time is written, want it left out")
	}

	s := domain.Suspension{SuspendedAt: time.Date(2026, 11, 27, 10, 0, 2, 340_000_000, time.UTC),
		Until: time.Date(2026, 12, 1, 0, 0, 0, 0, paris)}
	b, err := json.Marshal(toProblem(domain.ErrSuspended(s)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"suspendedAt":"2026-11-27T10:00:02.340Z"`, `"until":"2026-11-30T23:00:00.000Z"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("problem %s: want %s", b, want)
		}
	}
}

// TestABadUntilIsNamed (bad input gets a clear answer): a suspension's
// until that is valid JSON but no RFC 3339 time (a word, a number, a
// month 13) is refused 400 validation_failed naming until, as every
// other field of the wrong form is, not as a body that is not JSON. The
// router has no services: the body is refused before any is called.
func TestABadUntilIsNamed(t *testing.T) {
	t.Parallel()
	h := testRouter(t)
	for _, until := range []string{`"tomorrow"`, `"2026-13-01T00:00:00Z"`, `"2026-12-01"`, `1764547200`, `true`, `{}`} {
		body := `{"reason":"spam","until":` + until + `}`
		req := httptest.NewRequest(http.MethodPost, "/v1/users/u_x/suspension", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("until %s: %d %s, want 400", until, rec.Code, rec.Body)
			continue
		}
		var p Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if p.Code != "validation_failed" || len(p.Errors) != 1 || p.Errors[0].Field != "until" || p.Errors[0].Message == "" {
			t.Errorf("until %s: %s, want validation_failed naming until", until, rec.Body)
		}
	}
}

// TestAnUntilInRFC3339sLowerCaseIsTaken: RFC 3339 (section 5.6) lets a
// time write its T and Z in lower case, and openapi.yaml's until is a
// date-time, which JSON Schema reads as RFC 3339: 2026-12-01t00:00:00z
// is one. Go's time parser takes upper case alone, so such an until was
// refused 400 "must be an RFC 3339 time" though it is one. It is read as
// the same time in upper case.
func TestAnUntilInRFC3339sLowerCaseIsTaken(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, until := range []string{"2026-12-01t00:00:00z", "2026-12-01T00:00:00z", "2026-12-01t01:00:00+01:00"} {
		var req suspendRequest
		if err := decodeBody(t, &req, map[string]string{"reason": "spam", "until": until}); err != nil {
			t.Errorf("until %s: %v, want it taken", until, err)
			continue
		}
		if got := time.Time(*req.Until); !got.Equal(want) {
			t.Errorf("until %s read as %s, want %s", until, got, want)
		}
	}
}

// TestAnUntilWithAnEscapedCharacterIsTaken: an until is a JSON string, and
// JSON may write any of its characters as an escape: .NET's
// System.Text.Json, by default, writes a time's offset sign as \u002B
// ("2026-12-01T01:00:00\u002B01:00"). The time was parsed from the raw
// bytes between the quotes, so such an until, the same string as every
// client's, was refused 400 "must be an RFC 3339 time". The string is read
// as JSON reads it first.
func TestAnUntilWithAnEscapedCharacterIsTaken(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, until := range []string{`"2026-12-01T01:00:00\u002B01:00"`, `"2026-12-01T00:00:00\u005A"`, `"2026\u002d12-01t00:00:00z"`} {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"reason":"spam","until":`+until+`}`))
		req.Header.Set("Content-Type", "application/json")
		var body suspendRequest
		if err := decodeJSON(req, &body); err != nil {
			t.Errorf("until %s: %v, want it taken", until, err)
			continue
		}
		if got := time.Time(*body.Until); !got.Equal(want) {
			t.Errorf("until %s read as %s, want %s", until, got, want)
		}
	}
}
