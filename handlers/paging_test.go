package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPageLimitIsOneCanonicalNumber: limit is a whole number from 1 to 100
// written as the contract writes it, given once; "+5", "05", " 5", "5.0"
// and two limits are refused, naming limit.
func TestPageLimitIsOneCanonicalNumber(t *testing.T) {
	t.Parallel()
	for query, want := range map[string]int{
		"":                defaultPageLimit,
		"limit=5":         5,
		"limit=100":       100,
		"limit=+5":        0,
		"limit=05":        0,
		"limit=%205":      0,
		"limit=5.0":       0,
		"limit=0":         0,
		"limit=101":       0,
		"limit=":          0,
		"limit=5&limit=6": 0,
	} {
		n, err := pageLimit(httptest.NewRequest(http.MethodGet, "/v1/suspensions?"+query, nil))
		if want == 0 {
			p, ok := err.(*Problem)
			if !ok || p.Status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != "limit" {
				t.Errorf("%q: %d, %v; want a 400 naming limit", query, n, err)
			}
			continue
		}
		if err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", query, n, err, want)
		}
	}
}
