//go:build integration || bench

package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"

	"shelf/tests/bench/lean"
)

// op is one measured operation, the same on the three sides: through the
// api, through the lean server, and as the lean server's statements in
// this process with no HTTP (raw).
type op struct {
	name string
	// model is the sequential round trips the design notes' cost model
	// gives the request (docs/design/cost-model.md).
	model int
	// route and method name the api's series of round trips per request.
	route, method string
	// read: the ratio to lean must be at least goal (0.9).
	read bool
	// request is the HTTP request on a server at base; want its status.
	request func(base string) (method, path, token, body string)
	want    int
	raw     func(ctx context.Context, s *lean.Store) error
}

// ops are the operations of the table, reads first.
func ops(f *fixture) []op {
	get := func(path, token string) func(string) (string, string, string, string) {
		return func(string) (string, string, string, string) { return http.MethodGet, path, token, "" }
	}
	libraryIn := func(principal, token, order, cursor string) func(ctx context.Context, s *lean.Store) error {
		return func(ctx context.Context, s *lean.Store) error {
			c, err := s.Authenticate(ctx, token)
			if err != nil {
				return err
			}
			p, err := s.Library(ctx, c, principal, order, cursor, 20)
			if err == nil && len(p.Items) != 20 {
				err = fmt.Errorf("library page of %d items", len(p.Items))
			}
			return err
		}
	}
	library := func(principal, token, cursor string) func(ctx context.Context, s *lean.Store) error {
		return libraryIn(principal, token, "", cursor)
	}
	suspended := func(cursor string) func(ctx context.Context, s *lean.Store) error {
		return func(ctx context.Context, s *lean.Store) error {
			c, err := s.Authenticate(ctx, f.admin.token)
			if err != nil {
				return err
			}
			p, err := s.Suspended(ctx, c, cursor, 20)
			if err == nil && len(p.Items) != 20 {
				err = fmt.Errorf("suspended page of %d items", len(p.Items))
			}
			return err
		}
	}
	userLib := "/v1/users/" + f.owner.id + "/library?limit=20"
	groupLib := "/v1/groups/" + f.group + "/library?limit=20"
	var next atomic.Int64
	loginAs := func() account { return f.logins[int(next.Add(1))%len(f.logins)] }
	return []op{
		{name: "user by id, anonymous", model: 1, route: "/v1/users/{id}", method: "GET", read: true,
			request: get("/v1/users/"+f.owner.id, ""), want: http.StatusOK,
			raw: func(ctx context.Context, s *lean.Store) error { _, err := s.GetUser(ctx, f.owner.id); return err }},
		{name: "user by username, anonymous", model: 2, route: "/v1/users/by-username/{username}", method: "GET", read: true,
			request: get("/v1/users/by-username/"+url.PathEscape(f.owner.username), ""), want: http.StatusOK,
			raw: func(ctx context.Context, s *lean.Store) error {
				_, err := s.ByUsername(ctx, f.owner.username)
				return err
			}},
		{name: "library page 1, anonymous", model: 1, route: "/v1/users/{id}/library", method: "GET", read: true,
			request: get(userLib, ""), want: http.StatusOK, raw: library(f.owner.id, "", "")},
		{name: "library page 1000, anonymous", model: 1, route: "/v1/users/{id}/library", method: "GET", read: true,
			request: get(userLib+"&cursor="+f.ownerPage1000, ""), want: http.StatusOK, raw: library(f.owner.id, "", f.ownerPage1000)},
		{name: "library page 1000, anonymous, oldest first", model: 1, route: "/v1/users/{id}/library", method: "GET", read: true,
			request: get(userLib+"&order=oldest&cursor="+f.ownerOldestPage1000, ""), want: http.StatusOK, raw: libraryIn(f.owner.id, "", "oldest", f.ownerOldestPage1000)},
		{name: "library page 1, owner", model: 2, route: "/v1/users/{id}/library", method: "GET", read: true,
			request: get(userLib, f.owner.token), want: http.StatusOK, raw: library(f.owner.id, f.owner.token, "")},
		{name: "library page 1000, owner", model: 2, route: "/v1/users/{id}/library", method: "GET", read: true,
			request: get(userLib+"&cursor="+f.ownerPage1000, f.owner.token), want: http.StatusOK, raw: library(f.owner.id, f.owner.token, f.ownerPage1000)},
		{name: "group library page 1, member", model: 2, route: "/v1/groups/{id}/library", method: "GET", read: true,
			request: get(groupLib, f.member.token), want: http.StatusOK, raw: library(f.group, f.member.token, "")},
		{name: "group library page 1000, member", model: 2, route: "/v1/groups/{id}/library", method: "GET", read: true,
			request: get(groupLib+"&cursor="+f.groupPage1000, f.member.token), want: http.StatusOK, raw: library(f.group, f.member.token, f.groupPage1000)},
		{name: "suspended list, first page", model: 3, route: "/v1/suspensions", method: "GET", read: true,
			request: get("/v1/suspensions?limit=20", f.admin.token), want: http.StatusOK, raw: suspended("")},
		{name: "suspended list, 90% deep", model: 3, route: "/v1/suspensions", method: "GET", read: true,
			request: get("/v1/suspensions?limit=20&cursor="+f.suspendedDeep, f.admin.token), want: http.StatusOK, raw: suspended(f.suspendedDeep)},
		{name: "login (database part)", model: 11, route: "/v1/sessions", method: "POST",
			request: func(string) (string, string, string, string) {
				a := loginAs()
				return http.MethodPost, "/v1/sessions", "", fmt.Sprintf(`{"login":%q,"password":%q}`, a.username, testPassword)
			}, want: http.StatusCreated,
			raw: func(ctx context.Context, s *lean.Store) error {
				_, err := s.Login(ctx, loginAs().username, testPassword)
				return err
			}},
		{name: "signup (database part)", model: 3, route: "/v1/users", method: "POST",
			request: func(string) (string, string, string, string) {
				u, e := fresh()
				return http.MethodPost, "/v1/users", "", fmt.Sprintf(`{"username":%q,"email":%q,"password":%q}`, u, e, testPassword)
			}, want: http.StatusCreated,
			raw: func(ctx context.Context, s *lean.Store) error {
				u, e := fresh()
				_, err := s.Signup(ctx, u, e, testPassword)
				return err
			}},
	}
}
