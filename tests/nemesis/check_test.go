//go:build nemesis

package nemesis

import (
	"context"
	"net/http"
	"slices"
	"time"

	"shelf/repository"
	"shelf/tests/internal/checker"
	"shelf/tests/testkit"
)

// readKeys checks U1 on the cluster's tables (checker.CheckKeys) and
// returns who holds each key.
func readKeys(ctx context.Context) (verdict, map[string]string, error) {
	s, err := repository.Connect(ctx, testkit.ConnConfig(addresses[:], "nemesis"), time.Minute)
	if err != nil {
		return verdict{Name: "U1 no key held twice, claims committed"}, nil, err
	}
	defer s.Close()
	return checker.CheckKeys(ctx, s)
}

// checkSignups checks U3 for every account the workload signed up
// (checker.CheckSignups) and returns those still there.
func checkSignups(c *client, admin string, events []event, accounts []*account) (verdict, []*account) {
	signups := make([]checker.Signup, len(accounts))
	for i, a := range accounts {
		signups[i] = checker.Signup{ID: a.id, Passwords: a.passwords}
	}
	v, there := checker.CheckSignups(c, admin, events, signups)
	var live []*account
	for i, a := range accounts {
		if there[i] {
			live = append(live, a)
		}
	}
	return v, live
}

// checkGroups: every group is within its capacity and its count is its
// members (L7). A group whose closing answered 202 is 404; one whose
// closing's outcome is unknown may be.
func checkGroups(c *client, admin string, events []event, groups []string) verdict {
	v := verdict{Name: "L7 groups within capacity, counts exact"}
	closed := closings(events)
	for _, g := range groups {
		v.Checked++
		status, out := c.Call(0, 0, "check-group", http.MethodGet, "/v1/groups/"+g, admin, nil, nil)
		switch {
		case closed[g] == "yes" && status != http.StatusNotFound:
			v.Fail("%s: closed (202), yet GET answers %d", g, status)
			continue
		case closed[g] != "" && status == http.StatusNotFound:
			continue
		case status != http.StatusOK:
			v.Fail("%s: GET answers %d", g, status)
			continue
		}
		count, _ := out["memberCount"].(float64)
		limit, _ := out["maxMembers"].(float64)
		status, page := c.Call(0, 0, "check-members", http.MethodGet, "/v1/groups/"+g+"/members?limit=100", admin, nil, nil)
		items, _ := page["items"].([]any)
		if status != http.StatusOK || float64(len(items)) != count || (limit > 0 && count > limit) {
			v.Fail("%s: memberCount %v, maxMembers %v, %d members listed (%d)", g, count, limit, len(items), status)
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
	v := verdict{Name: "content: nothing acknowledged is lost"}
	models := contentModel(events)
	for _, it := range items {
		m := models[it.id]
		if m == nil {
			continue
		}
		v.Checked++
		status, _ := c.Call(0, 0, "check-content", http.MethodGet, "/v1/content/"+it.id, admin, nil, nil)
		switch finals := m.live.finals(); {
		case !slices.Contains(finals, "live"):
			if status != http.StatusNotFound {
				v.Fail("%s: deleted (202), yet GET answers %d", it.id, status)
			}
		case !slices.Contains(finals, "deleted"):
			if status != http.StatusOK {
				v.Fail("%s: created (201), never deleted, yet GET answers %d", it.id, status)
			}
		}
	}
	return v
}
