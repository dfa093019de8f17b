package handlers

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/tests/testkit"
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

// TestAQueryNameInAnotherCaseIsRefusedNotIgnored: ann signs out her other
// sessions with DELETE /v1/users/{id}/sessions?Keep=current, a case slip
// (or a proxy in front that reads names case-insensitively, as a body's
// are refused when they match only in another case). The name was not
// keep, so it was ignored: every session ended, hers too. Likewise
// ?Order=oldest read newest first, ?Cursor= the first page again, ?Limit=
// twenty items, an admin's ?Actor= the whole audit. Each is 400 naming the
// parameter as sent, and nothing is done.
func TestAQueryNameInAnotherCaseIsRefusedNotIgnored(t *testing.T) {
	t.Parallel()
	contract, err := testkit.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	app := newMemApp(t)
	ann := "/v1/users/" + app.ann
	for path, field := range map[string]string{
		ann + "/sessions?Keep=current":        "Keep",
		ann + "/sessions?keep=current&KEEP=x": "KEEP",
		ann + "/library?Order=oldest":         "Order",
		ann + "/library?Cursor=abc":           "Cursor",
		ann + "/library?limit=5&LIMIT=50":     "LIMIT",
		"/v1/suspensions?Limit=5":             "Limit",
		"/v1/audit?Actor=" + app.ann:          "Actor",
		"/v1/people?Prefix=an":                "Prefix",
	} {
		method := http.MethodGet
		if strings.Contains(path, "/sessions") {
			method = http.MethodDelete
		}
		p := problemOf(t, app.checked(t, contract, app.token, method, path, ""), http.StatusBadRequest, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != field || p.Errors[0].Code != "unknown" {
			t.Errorf("%s %s: %+v; want one error naming %s, code unknown", method, path, p.Errors, field)
		}
	}
	if rec := app.do(http.MethodGet, "/v1/me", ""); rec.Code != http.StatusOK {
		t.Fatalf("ann's session after the refused sign-outs: %d %s", rec.Code, rec.Body)
	}
}

// TestAnEmptyCursorIsRefusedNotReadAsTheFirstPage: a client that pages
// with ?cursor=<the last nextCursor> sends ?cursor= once the last page
// came without one (or lost it). Read as no cursor, that was the first
// page again, quietly, and such a client listed every item again without
// end. No list hands out an empty cursor, so, like an empty limit or
// order, it is 400 naming cursor (code invalid) on every list, whoever
// asks; the first page is asked for by leaving cursor out.
func TestAnEmptyCursorIsRefusedNotReadAsTheFirstPage(t *testing.T) {
	t.Parallel()
	contract, err := testkit.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	app := newMemApp(t)
	ann := "/v1/users/" + app.ann
	for _, path := range []string{
		ann + "/library?cursor=",
		ann + "/library?order=oldest&limit=5&cursor=",
		ann + "/library?cursor",
		ann + "/sessions?cursor=",
		ann + "/groups?cursor=&limit=3",
		ann + "/audit?cursor=",
		ann + "/moderation-history?cursor=",
		"/v1/suspensions?cursor=",
		"/v1/audit?cursor=",
		"/v1/people?prefix=an&cursor=",
		"/v1/users?q=ann&cursor=",
	} {
		p := problemOf(t, app.checked(t, contract, app.token, http.MethodGet, path, ""), http.StatusBadRequest, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != "cursor" || p.Errors[0].Code != "invalid" {
			t.Errorf("GET %s: %+v; want one error naming cursor, code invalid", path, p.Errors)
		}
	}
	// Left out, it is the first page.
	if rec := app.do(http.MethodGet, ann+"/library?limit=5", ""); rec.Code != http.StatusOK {
		t.Fatalf("the first page without a cursor: %d %s", rec.Code, rec.Body)
	}
}
