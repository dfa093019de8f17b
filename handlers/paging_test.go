package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPageLimitIsOneCanonicalNumber: limit is a whole number from 1 to 100
// written as the contract writes it, given once; "+5", "05", " 5", "5.0"
// and two limits are refused, naming limit; so are two cursors, naming
// cursor.
func TestPageLimitIsOneCanonicalNumber(t *testing.T) {
	t.Parallel()
	for query, want := range map[string]int{
		"":                          defaultPageLimit,
		"cursor=abc":                defaultPageLimit,
		"cursor=abc&cursor=abc":     -1,
		"cursor=abc&cursor=def":     -1,
		"limit=5&cursor=a&cursor=b": -1,
		"limit=5":                   5,
		"limit=100":                 100,
		"limit=+5":                  0,
		"limit=05":                  0,
		"limit=%205":                0,
		"limit=5.0":                 0,
		"limit=0":                   0,
		"limit=101":                 0,
		"limit=":                    0,
		"limit=5&limit=6":           0,
	} {
		_, n, err := pageParams(httptest.NewRequest(http.MethodGet, "/v1/suspensions?"+query, nil))
		if want == -1 {
			p, ok := err.(*Problem)
			if !ok || p.Status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != "cursor" || p.Errors[0].Code != "duplicate" {
				t.Errorf("%q: %d, %v; want a 400 naming cursor", query, n, err)
			}
			continue
		}
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
