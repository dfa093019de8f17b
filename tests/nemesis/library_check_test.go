//go:build nemesis

package nemesis

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// readItems reads every item the workload made, and its members, as an
// admin.
func readItems(c *client, admin string, items []*item) (map[string]itemState, error) {
	out := map[string]itemState{}
	for _, it := range items {
		status, body := c.Call(0, 0, "check-content", http.MethodGet, "/v1/content/"+it.id, admin, nil, nil)
		if status == http.StatusNotFound {
			out[it.id] = itemState{}
			continue
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d", it.id, status)
		}
		s := itemState{live: true, members: map[string]string{}}
		s.name, _ = body["name"].(string)
		s.visibility, _ = body["visibility"].(string)
		cursor := ""
		for {
			path := "/v1/content/" + it.id + "/members?limit=100"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			status, page := c.Call(0, 0, "check-content-members", http.MethodGet, path, admin, nil, nil)
			if status != http.StatusOK {
				return nil, fmt.Errorf("members of %s: %d", it.id, status)
			}
			list, _ := page["items"].([]any)
			for _, m := range list {
				member, _ := m.(map[string]any)
				if p, ok := member["principalId"].(string); ok {
					s.members[p], _ = member["role"].(string)
				}
			}
			next, _ := page["nextCursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		out[it.id] = s
	}
	return out, nil
}

// visibleTo lists the visibilities a viewer kind may see in someone's
// library (L1): the owner or an admin all, another session public and
// loggedin, an anonymous caller public.
var visibleTo = map[string][]string{
	"admin":     {"public", "loggedin", "private"},
	"session":   {"public", "loggedin"},
	"anonymous": {"public"},
}

// checkLibraries reads every account's library as an admin, as another
// session and anonymously, page by page, and compares it with the items as
// they are: exactly the live items the account is a member of that the
// viewer may see (L1, L3), each once (L2), with its current name and
// visibility (L4), newest first. An item a library lists that the workload
// never heard of (its creation's answer was lost or 503) is read too: it
// may exist.
func checkLibraries(c *client, admin, session string, items map[string]itemState, accounts []*account) verdict {
	v := verdict{Name: "L1-L4 every library as every viewer kind"}
	tokens := map[string]string{"admin": admin, "session": session, "anonymous": ""}
	type read struct {
		user, kind string
		got        []string
	}
	var reads []read
	for _, a := range accounts {
		for _, kind := range []string{"admin", "session", "anonymous"} {
			v.Checked++
			got, problem := readLibrary(c, tokens[kind], a.id)
			if problem != "" {
				v.Fail("%s's library as %s: %s", a.id, kind, problem)
				continue
			}
			reads = append(reads, read{a.id, kind, got})
			for _, g := range got {
				id, _, _ := strings.Cut(g, " ")
				if _, known := items[id]; !known {
					extra, err := readItems(c, admin, []*item{{id: id}})
					if err != nil {
						v.Fail("item %s listed in %s's library: %v", id, a.id, err)
						continue
					}
					items[id] = extra[id]
				}
			}
		}
	}
	for _, r := range reads {
		var want []string
		for id, s := range items {
			if s.live && s.members[r.user] != "" && slices.Contains(visibleTo[r.kind], s.visibility) {
				want = append(want, id+" "+s.name+" "+s.visibility)
			}
		}
		sort.Strings(want)
		sorted := slices.Clone(r.got)
		sort.Strings(sorted)
		if !slices.Equal(sorted, want) {
			v.Fail("%s's library as %s lists %v, want %v", r.user, r.kind, r.got, want)
		}
	}
	return v
}

// readLibrary pages through a library; it reports a duplicate or a page
// out of order as a problem.
func readLibrary(c *client, token, userID string) ([]string, string) {
	var got []string
	seen := map[string]bool{}
	var lastAt time.Time
	lastID := ""
	cursor := ""
	for pages := 0; pages < 1000; pages++ {
		path := "/v1/users/" + userID + "/library?limit=7"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		status, page := c.Call(0, 0, "check-library", http.MethodGet, path, token, nil, nil)
		if status != http.StatusOK {
			return nil, fmt.Sprintf("page answers %d", status)
		}
		list, _ := page["items"].([]any)
		for _, raw := range list {
			e, _ := raw.(map[string]any)
			id, _ := e["id"].(string)
			name, _ := e["name"].(string)
			vis, _ := e["visibility"].(string)
			lm, _ := e["lastModified"].(string)
			if seen[id] {
				return nil, "lists " + id + " twice"
			}
			seen[id] = true
			at, err := time.Parse(time.RFC3339Nano, lm)
			if err != nil {
				return nil, "lastModified " + lm + ": " + err.Error()
			}
			if lastID != "" && (at.After(lastAt) || (at.Equal(lastAt) && id > lastID)) {
				return nil, "not newest first at " + id
			}
			lastAt, lastID = at, id
			got = append(got, id+" "+name+" "+vis)
		}
		next, _ := page["nextCursor"].(string)
		if next == "" {
			return got, ""
		}
		cursor = next
	}
	return nil, "more than 1000 pages"
}
