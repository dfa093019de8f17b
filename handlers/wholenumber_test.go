package handlers

import (
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWholeNumbersAsJSONSchemaCountsThem: an integer field takes every
// number whose value is whole, however written (JSON Schema counts 2540.0
// as an integer); fractions and other kinds are wrong_type naming the
// field; values beyond an int stay numbers (the range rule answers).
func TestWholeNumbersAsJSONSchemaCountsThem(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		"2540": 2540, "2540.0": 2540, "2540.000": 2540, "2.54e3": 2540, "2.54E+3": 2540, "254000e-2": 2540,
		"0": 0, "-0": 0, "0.0": 0, "0e99999999999999999999": 0, "-7": -7, "-7.0": -7, "1e2": 100,
		"123456789012345678": 123456789012345678, "1e30": math.MaxInt, "-1e30": -math.MaxInt,
		"1e99999999999999999999": math.MaxInt, "99999999999999999999999": math.MaxInt,
	} {
		var n wholeNumber
		if err := n.UnmarshalJSON([]byte(in)); err != nil || int(n) != want {
			t.Errorf("%s: %d, %v; want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"2540.5", "0.1", "1e-1", "25e-1", "1e-99999999999999999999", `"2540"`, "true", "[1]", "{}", "+5", "05", ".5", "5."} {
		var n wholeNumber
		if err := n.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s: accepted as %d", in, n)
		}
	}
	for body, want := range map[string]string{
		`{"name":"abcd","maxMembers":2540.0}`: "",
		`{"name":"abcd","maxMembers":2540.5}`: "wrong_type",
		`{"name":"abcd","maxMembers":"25"}`:   "wrong_type",
	} {
		var req createGroupRequest
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		err := decodeJSON(r, &req)
		if want == "" {
			if err != nil || *req.MaxMembers.intPointer() != 2540 {
				t.Errorf("%s: %v", body, err)
			}
			continue
		}
		p, ok := err.(*Problem)
		if !ok || len(p.Errors) != 1 || p.Errors[0].Field != "maxMembers" || p.Errors[0].Code != want || !strings.Contains(p.Errors[0].Message, "whole number") {
			t.Errorf("%s: %v, want maxMembers %s", body, err, want)
		}
	}
}

// TestWholeNumbersWithExponentsNearInt64sEnds: an exponent that int64
// holds but whose sum with the digits' shift does not (1e9223372036854775807,
// 0.1e-9223372036854775808) is read as any huge exponent: a whole number
// beyond an int (the range rule answers) or a fraction (wrong_type),
// never a panic that the recoverer answers 500.
func TestWholeNumbersWithExponentsNearInt64sEnds(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		"1e9223372036854775807": math.MaxInt, "1.5e9223372036854775807": math.MaxInt,
		"10e9223372036854775807": math.MaxInt, "-1e9223372036854775807": -math.MaxInt,
	} {
		var n wholeNumber
		if err := n.UnmarshalJSON([]byte(in)); err != nil || int(n) != want {
			t.Errorf("%s: %d, %v; want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"0.1e-9223372036854775808", "1e-9223372036854775808", "15e-9223372036854775807"} {
		var n wholeNumber
		if err := n.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s: accepted as %d", in, n)
		}
	}
	// Through the router (no session: the decoded body is refused 401,
	// the fraction 400): a panic in the decoder is answered 500 by the
	// recoverer.
	h := surfaceRouter(&bytes.Buffer{}, nil)
	for _, v := range []string{"1e9223372036854775807", "0.1e-9223372036854775808"} {
		r := httptest.NewRequest(http.MethodPost, "/v1/groups", strings.NewReader(`{"name":"abcd","maxMembers":`+v+`}`))
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code >= http.StatusInternalServerError {
			t.Errorf("maxMembers %s: %d %s", v, rec.Code, rec.Body)
		}
	}
}
