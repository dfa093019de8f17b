package handlers

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"shelf/domain"
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

// TestLibraryOrderIsNewestOrOldest: a library's order is newest (also
// when left out) or oldest, given once; anything else, empty included, is
// refused naming order, and the page parameters keep their rules beside it.
func TestLibraryOrderIsNewestOrOldest(t *testing.T) {
	t.Parallel()
	for query, want := range map[string]string{
		"":                               "newest",
		"limit=5":                        "newest",
		"order=newest":                   "newest",
		"order=oldest&limit=5":           "oldest",
		"cursor=abc&order=oldest":        "oldest",
		"order=":                         "order",
		"order=asc":                      "order",
		"order=Oldest":                   "order",
		"order=oldest%20":                "order",
		"order=oldest&order=oldest":      "order",
		"order=oldest&limit=0":           "limit",
		"order=oldest&cursor=a&cursor=b": "cursor",
	} {
		order, _, _, err := libraryParams(httptest.NewRequest(http.MethodGet, "/v1/users/u_x/library?"+query, nil))
		if want == "newest" || want == "oldest" {
			if err != nil || string(order) != want {
				t.Errorf("%q: %q, %v; want %s", query, order, err, want)
			}
			continue
		}
		var fields []string
		var p *Problem
		var de *domain.Error
		switch {
		case errors.As(err, &p) && p.Status == http.StatusBadRequest:
			for _, f := range p.Errors {
				fields = append(fields, f.Field)
			}
		case errors.As(err, &de) && errors.Is(err, domain.ErrInvalid):
			for _, f := range de.Fields {
				fields = append(fields, f.Field)
			}
		}
		if len(fields) != 1 || fields[0] != want {
			t.Errorf("%q: %q, %v; want a 400 naming %s", query, order, err, want)
		}
	}
}
