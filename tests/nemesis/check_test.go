//go:build nemesis

package nemesis

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"shelf/internal/testkit"
	"shelf/repository"
)

// checkAnswers: no answer is a 5xx other than 503.
func checkAnswers(events []event) verdict {
	v := verdict{name: "no 5xx other than 503"}
	for _, e := range events {
		if e.Kind != "op" {
			continue
		}
		v.checked++
		if e.Status >= 500 && e.Status != http.StatusServiceUnavailable {
			v.fail("%s on api %d answered %d (%s) at %s", e.Op, e.API, e.Status, e.Code, e.Start.Format("15:04:05.000"))
		}
	}
	return v
}

// checkKeys reads every account, group and claim: no two accounts that
// hold their names (active, suspended, or deleting: a deletion frees them
// only once the account is deleted) hold one key, nor two groups that hold
// theirs (active or closing) one name, and every key such an owner holds
// is committed to it (U1). It returns who holds each key
// ("usernames/<key>", "emails/<key>", "group_names/<key>").
func checkKeys(ctx context.Context) (verdict, map[string]string, error) {
	v := verdict{name: "U1 no key held twice, claims committed"}
	conn := testkit.ConnConfig(addresses[:], "nemesis")
	s, err := repository.Connect(ctx, conn, time.Minute)
	if err != nil {
		return v, nil, err
	}
	defer s.Close()
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
		v.checked++
		for _, key := range keys {
			if other, ok := holders[key]; ok {
				v.fail("%s is held by %s and %s", key, other, id)
			}
			holders[key] = id
			if c := claims[key]; c.owner != id || c.state != "committed" {
				v.fail("%s holds %s, whose claim is %+v", id, key, c)
			}
		}
	}
	iter := s.ContextQuery(ctx, "SELECT id, username_key, email_key, status FROM users", nil).Iter()
	var id, uk, ek, status string
	for iter.Scan(&id, &uk, &ek, &status) {
		if status == "active" || status == "suspended" || status == "deleting" {
			hold(id, "usernames/"+uk, "emails/"+ek)
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

// checkSignups: every signup that answered 201 is found by its username
// and by its email (U3): a login with one of its possible passwords
// answers 201, or 403 suspended (the password matched). An account whose
// deletion answered 204 is 404 instead; one whose deletion's outcome is
// unknown may be either. It returns the accounts still there.
func checkSignups(c *client, admin string, events []event, accounts []*account) (verdict, []*account) {
	v := verdict{name: "U3 every 201 signup found by both names"}
	deleted := deletions(events)
	var live []*account
	for _, a := range accounts {
		v.checked++
		status, out := c.call(0, 0, "check-user", http.MethodGet, "/v1/users/"+a.id, admin, nil, nil)
		switch {
		case deleted[a.id] == "yes" && status != http.StatusNotFound:
			v.fail("%s: deleted (204), yet GET answers %d", a.id, status)
			continue
		case deleted[a.id] != "" && status == http.StatusNotFound:
			continue
		case status != http.StatusOK:
			v.fail("%s: GET answers %d", a.id, status)
			continue
		}
		live = append(live, a)
		username, _ := out["username"].(string)
		email, _ := out["email"].(string)
		for _, login := range []string{username, email} {
			found := false
			for _, pw := range a.passwords {
				st, body := c.call(0, 0, "check-login", http.MethodPost, "/v1/sessions", "",
					map[string]string{"login": login, "password": pw}, nil)
				if st == http.StatusCreated || (st == http.StatusForbidden && body["code"] == "suspended") {
					found = true
					break
				}
			}
			if !found {
				v.fail("%s cannot log in as %q with any of its %d possible passwords", a.id, login, len(a.passwords))
			}
		}
	}
	return v, live
}

// checkSuspensions runs the repair in dry-run mode after the real one: the
// records must agree with the accounts (S2).
func checkSuspensions(api *apiProc) verdict {
	v := verdict{name: "S2 records agree with the accounts", checked: 1}
	out, err := api.admin("repair-suspensions", "--dry-run")
	if err != nil || !strings.Contains(out, "all records agree") {
		v.fail("dry run after repair: %v\n%s", err, out)
	}
	return v
}

// checkGroups: every group is within its capacity and its count is its
// members (L7). A group whose closing answered 204 is 404; one whose
// closing's outcome is unknown may be.
func checkGroups(c *client, admin string, events []event, groups []string) verdict {
	v := verdict{name: "L7 groups within capacity, counts exact"}
	closed := closings(events)
	for _, g := range groups {
		v.checked++
		status, out := c.call(0, 0, "check-group", http.MethodGet, "/v1/groups/"+g, admin, nil, nil)
		switch {
		case closed[g] == "yes" && status != http.StatusNotFound:
			v.fail("%s: closed (204), yet GET answers %d", g, status)
			continue
		case closed[g] != "" && status == http.StatusNotFound:
			continue
		case status != http.StatusOK:
			v.fail("%s: GET answers %d", g, status)
			continue
		}
		count, _ := out["memberCount"].(float64)
		limit, _ := out["maxMembers"].(float64)
		status, page := c.call(0, 0, "check-members", http.MethodGet, "/v1/groups/"+g+"/members?limit=100", admin, nil, nil)
		items, _ := page["items"].([]any)
		if status != http.StatusOK || float64(len(items)) != count || (limit > 0 && count > limit) {
			v.fail("%s: memberCount %v, maxMembers %v, %d members listed (%d)", g, count, limit, len(items), status)
		}
	}
	return v
}

// checkContent: an item whose creation was acknowledged and that nothing
// deleted still opens (for an admin: the creator's session may have ended
// with a suspension or a password change); one whose delete was
// acknowledged does not ("nothing acknowledged is lost"). What deleted it
// is the item model's: a delete, or the deletion of its creator or of a
// manager that may have been its last.
func checkContent(c *client, admin string, events []event, items []*item) verdict {
	v := verdict{name: "content: nothing acknowledged is lost"}
	models := contentModel(events)
	for _, it := range items {
		m := models[it.id]
		if m == nil {
			continue
		}
		v.checked++
		status, _ := c.call(0, 0, "check-content", http.MethodGet, "/v1/content/"+it.id, admin, nil, nil)
		switch finals := m.live.finals(); {
		case !slices.Contains(finals, "live"):
			if status != http.StatusNotFound {
				v.fail("%s: deleted (204), yet GET answers %d", it.id, status)
			}
		case !slices.Contains(finals, "deleted"):
			if status != http.StatusOK {
				v.fail("%s: created (201), never deleted, yet GET answers %d", it.id, status)
			}
		}
	}
	return v
}

// summarize counts operations by result and faults by kind.
func summarize(events []event) string {
	type row struct{ ok, rejected, indeterminate, failed int }
	ops := map[string]*row{}
	faults := map[string]int{}
	for _, e := range events {
		if e.Kind == "fault" {
			faults[e.Op]++
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
		case e.indeterminate():
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
	fmt.Fprintf(&b, "\nfaults: kill-node %d, hang-node %d, hang-majority %d, kill-api %d\n",
		faults["kill-node"], faults["hang-node"], faults["hang-majority"], faults["kill-api"])
	return b.String()
}
