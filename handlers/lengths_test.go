package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFieldLengthsHaveOneCode: a field's length is one rule with one code
// whatever the input's length. The request types check only presence
// (required) and leave every rule to the domain, so a value of 5000
// characters or of none reaches it like one just over the limit; the
// fields with no domain rule (login, passwords to check) have one `length`
// rule here, for the empty and the too long alike.
func TestFieldLengthsHaveOneCode(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name   string
		dst    func() any
		fields map[string]string // every field, with a valid value
	}{
		{"signup", func() any { return &signupRequest{} }, map[string]string{"username": "ann", "email": "a@example.org", "password": "secret12", "displayName": "Ann"}},
		{"user patch", func() any { return &updateUserRequest{} }, map[string]string{"username": "ann", "email": "a@example.org", "displayName": "Ann"}},
		{"password", func() any { return &passwordRequest{} }, map[string]string{"newPassword": "secret12"}},
		{"group", func() any { return &createGroupRequest{} }, map[string]string{"name": "club", "displayName": "Club", "description": "d"}},
		{"group member", func() any { return &groupMemberRequest{} }, map[string]string{"role": "member"}},
		{"content", func() any { return &contentRequest{} }, map[string]string{"name": "n", "description": "d", "visibility": "private", "link": "https://example.org"}},
		{"share", func() any { return &shareRequest{} }, map[string]string{"role": "viewer"}},
		{"suspension", func() any { return &suspendRequest{} }, map[string]string{"reason": "spam"}},
	} {
		for field := range tc.fields {
			for _, v := range []string{"", long} {
				body := map[string]string{}
				for k, ok := range tc.fields {
					body[k] = ok
				}
				body[field] = v
				if tc.name == "password" {
					body["currentPassword"] = "current"
				}
				if err := decodeBody(t, tc.dst(), body); err != nil {
					t.Errorf("%s: %s of %d characters refused before the domain sees it: %v", tc.name, field, len(v), err)
				}
			}
		}
	}
	for _, field := range []string{"login", "password"} {
		for _, v := range []string{"", strings.Repeat("x", 1025), long} {
			body := map[string]string{"login": "ann", "password": "secret12", field: v}
			p, ok := decodeBody(t, &loginRequest{}, body).(*Problem)
			if !ok || len(p.Errors) != 1 || p.Errors[0].Field != field || p.Errors[0].Code != "length" || !strings.Contains(p.Errors[0].Message, "1-1024") {
				t.Errorf("login with %s of %d characters: %v", field, len(v), p)
			}
		}
	}
	for _, dst := range []any{&signupRequest{}, &loginRequest{}, &passwordRequest{}, &createGroupRequest{}, &groupMemberRequest{}, &shareRequest{}, &suspendRequest{}} {
		p, ok := decodeBody(t, dst, map[string]string{}).(*Problem)
		if !ok || len(p.Errors) == 0 || p.Errors[0].Code != "required" {
			t.Errorf("%T with nothing: %v, want required", dst, p)
		}
	}
}

// decodeBody sends body through decodeJSON into dst.
func decodeBody(t *testing.T, dst any, body map[string]string) error {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	return decodeJSON(req, dst)
}
