package checker

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/scylladb/gocqlx/v2"
)

// CheckAnswers: no answer is a 5xx other than 503.
func CheckAnswers(events []Event) Verdict {
	v := Verdict{Name: "no 5xx other than 503"}
	for _, e := range events {
		if e.Kind != "op" {
			continue
		}
		v.Checked++
		if e.Status >= 500 && e.Status != http.StatusServiceUnavailable {
			v.Fail("%s on api %d answered %d (%s) at %s", e.Op, e.API, e.Status, e.Code, e.Start.Format("15:04:05.000"))
		}
	}
	return v
}

// CheckKeys reads every account, group and claim through s: no two
// accounts that hold their names (active, suspended, or deleting: a
// deletion frees them only once the account is deleted) hold one key, nor
// two groups that hold theirs (active or closing) one name, and every key
// such an owner holds is committed to it (U1). An account holds its
// username, its email and the new email it asked for (pending until
// verified: nobody else may take it meanwhile). It returns who holds each
// key ("usernames/<key>", "emails/<key>", "group_names/<key>").
func CheckKeys(ctx context.Context, s gocqlx.Session) (Verdict, map[string]string, error) {
	v := Verdict{Name: "U1 no key held twice, claims committed"}
	type claim struct{ owner, state string }
	claims := map[string]claim{}
	for _, table := range []string{"usernames", "emails", "group_names"} {
		iter := s.ContextQuery(ctx, "SELECT key, user_id, state FROM "+table, nil).Iter()
		var key, owner, state string
		for iter.Scan(&key, &owner, &state) {
			claims[table+"/"+key] = claim{owner, state}
		}
		if err := iter.Close(); err != nil {
			return v, nil, err
		}
	}
	holders := map[string]string{}
	hold := func(id string, keys ...string) {
		v.Checked++
		for _, key := range keys {
			if other, ok := holders[key]; ok {
				v.Fail("%s is held by %s and %s", key, other, id)
			}
			holders[key] = id
			if c := claims[key]; c.owner != id || c.state != "committed" {
				v.Fail("%s holds %s, whose claim is %+v", id, key, c)
			}
		}
	}
	iter := s.ContextQuery(ctx, "SELECT id, username_key, email_key, pending_email_key, status FROM users", nil).Iter()
	var id, uk, ek, pk, status string
	for iter.Scan(&id, &uk, &ek, &pk, &status) {
		if status == "active" || status == "suspended" || status == "deleting" {
			keys := []string{"usernames/" + uk, "emails/" + ek}
			if pk != "" && pk != ek {
				keys = append(keys, "emails/"+pk)
			}
			hold(id, keys...)
		}
	}
	if err := iter.Close(); err != nil {
		return v, nil, err
	}
	iter = s.ContextQuery(ctx, "SELECT id, name_key, status FROM groups", nil).Iter()
	for iter.Scan(&id, &uk, &status) {
		if status == "active" || status == "closing" {
			hold(id, "group_names/"+uk)
		}
	}
	return v, holders, iter.Close()
}

// Signup is an account a 201 signup made, with every password it may have
// now.
type Signup struct {
	ID        string
	Passwords []string
}

// CheckSignups: every signup that answered 201 is found by its username
// and by its email (U3), through API 0: a login with one of its possible
// passwords answers 201, or 403 suspended (the password matched). An
// account whose deletion answered 202 is 404 instead; one whose deletion's
// outcome is unknown may be either. live[i] says whether accounts[i] is
// still there.
func CheckSignups(c *Client, admin string, events []Event, accounts []Signup) (v Verdict, live []bool) {
	v = Verdict{Name: "U3 every 201 signup found by both names"}
	deleted := Deletions(events)
	live = make([]bool, len(accounts))
	for i, a := range accounts {
		v.Checked++
		status, out := c.Call(0, 0, "check-user", http.MethodGet, "/v1/users/"+a.ID, admin, nil, nil)
		switch {
		case deleted[a.ID] == "yes" && status != http.StatusNotFound:
			v.Fail("%s: deleted (202), yet GET answers %d", a.ID, status)
			continue
		case deleted[a.ID] != "" && status == http.StatusNotFound:
			continue
		case status != http.StatusOK:
			v.Fail("%s: GET answers %d", a.ID, status)
			continue
		}
		live[i] = true
		username, _ := out["username"].(string)
		email, _ := out["email"].(string)
		for _, login := range []string{username, email} {
			found := false
			for _, pw := range a.Passwords {
				st, body := c.Call(0, 0, "check-login", http.MethodPost, "/v1/sessions", "",
					map[string]string{"login": login, "password": pw}, nil)
				if st == http.StatusCreated || (st == http.StatusForbidden && body["code"] == "suspended") {
					found = true
					break
				}
			}
			if !found {
				v.Fail("%s cannot log in as %q with any of its %d possible passwords", a.ID, login, len(a.Passwords))
			}
		}
	}
	return v, live
}

// CheckSuspensions runs the repair in dry-run mode (admin runs `api admin
// args...`) after the real one: the records must agree with the accounts
// (S2).
func CheckSuspensions(admin func(args ...string) (string, error)) Verdict {
	v := Verdict{Name: "S2 records agree with the accounts", Checked: 1}
	out, err := admin("repair-suspensions", "--dry-run")
	if err != nil || !strings.Contains(out, "all records agree") {
		v.Fail("dry run after repair: %v\n%s", err, out)
	}
	return v
}

// Summarize counts operations by result, and the faults of each kind
// (faults names them in the order printed).
func Summarize(events []Event, faults []string) string {
	type row struct{ ok, rejected, indeterminate, failed int }
	ops := map[string]*row{}
	applied := map[string]int{}
	for _, e := range events {
		if e.Kind == "fault" {
			applied[e.Op]++
			continue
		}
		if strings.HasPrefix(e.Op, "check-") {
			continue
		}
		r := ops[e.Op]
		if r == nil {
			r = &row{}
			ops[e.Op] = r
		}
		switch {
		case e.Status >= 200 && e.Status < 300:
			r.ok++
		case e.Indeterminate():
			r.indeterminate++
		case e.Status >= 400 && e.Status < 500:
			r.rejected++
		default:
			r.failed++
		}
	}
	var names []string
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %8s %9s %14s %7s\n", "operation", "ok", "rejected", "indeterminate", "failed")
	total := row{}
	for _, n := range names {
		r := ops[n]
		fmt.Fprintf(&b, "%-18s %8d %9d %14d %7d\n", n, r.ok, r.rejected, r.indeterminate, r.failed)
		total.ok += r.ok
		total.rejected += r.rejected
		total.indeterminate += r.indeterminate
		total.failed += r.failed
	}
	fmt.Fprintf(&b, "%-18s %8d %9d %14d %7d\n", "all", total.ok, total.rejected, total.indeterminate, total.failed)
	counts := make([]string, len(faults))
	for i, f := range faults {
		counts[i] = fmt.Sprintf("%s %d", f, applied[f])
	}
	fmt.Fprintf(&b, "\nfaults: %s\n", strings.Join(counts, ", "))
	return b.String()
}
