//go:build integration

package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// contentBody is the Content schema as tests read it.
type contentBody struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	Visibility   string    `json:"visibility"`
	Link         string    `json:"link"`
	CreatedBy    string    `json:"createdBy"`
	LastModified time.Time `json:"lastModified"`
}

// itemBody is the LibraryItem schema.
type itemBody struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Visibility   string    `json:"visibility"`
	LastModified time.Time `json:"lastModified"`
}

type itemPage struct {
	Items      []itemBody `json:"items"`
	NextCursor string     `json:"nextCursor"`
}

type groupBody struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	MemberCount int    `json:"memberCount"`
}

// createContent makes an item as the client's user.
func createContent(t *testing.T, api *testkit.API, name, visibility string) contentBody {
	t.Helper()
	r := api.Send(http.MethodPost, "/v1/content", map[string]string{"name": name, "visibility": visibility})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create %s: %d %s", name, r.StatusCode, r.Body)
	}
	var c contentBody
	r.JSON(t, &c)
	return c
}

// share shares an item with a principal and fails unless it answers 200/201.
func share(t *testing.T, api *testkit.API, contentID, principalID, role string) {
	t.Helper()
	putRole(t, api, "/v1/content/"+contentID+"/members/"+principalID, role)
}

// putRole PUTs {role} to a members path and fails unless it answers 200/201.
func putRole(t *testing.T, api *testkit.API, path, role string) {
	t.Helper()
	r := api.Send(http.MethodPut, path, map[string]string{"role": role})
	if r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: %d %s", path, r.StatusCode, r.Body)
	}
}

// createGroup makes a group as the client's user.
func createGroup(t *testing.T, api *testkit.API, maxMembers int) groupBody {
	t.Helper()
	body := map[string]any{"name": name("grp")}
	if maxMembers > 0 {
		body["maxMembers"] = maxMembers
	}
	r := api.Send(http.MethodPost, "/v1/groups", body)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create group: %d %s", r.StatusCode, r.Body)
	}
	var g groupBody
	r.JSON(t, &g)
	return g
}

// addToGroup adds a user to a group with a role (putGroupMember).
func addToGroup(t *testing.T, api *testkit.API, groupID, userID, role string) {
	t.Helper()
	if r := putGroupMember(api, groupID, userID, role); r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusOK {
		t.Fatalf("PUT member %s of %s as %s: %d %s", userID, groupID, role, r.StatusCode, r.Body)
	}
}

// libraryOf reads a whole library as the client sees it, limit at a time.
func libraryOf(t *testing.T, api *testkit.API, path string, limit int) []itemBody {
	t.Helper()
	return libraryIn(t, api, path, "", limit)
}

// libraryIn reads a whole library in an order (newest, oldest; empty: the
// parameter left out), limit at a time.
func libraryIn(t *testing.T, api *testkit.API, path, order string, limit int) []itemBody {
	t.Helper()
	return libraryUpTo(t, api, path, order, limit, -1)
}

// libraryUpTo is libraryIn that stops once it has most items (all of them
// when most is negative).
func libraryUpTo(t *testing.T, api *testkit.API, path, order string, limit, most int) []itemBody {
	t.Helper()
	var all []itemBody
	cursor := ""
	for pages := 0; pages < 100000; pages++ {
		p := path + "?limit=" + itoa(limit)
		if order != "" {
			p += "&order=" + order
		}
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := api.Get(p)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.StatusCode, r.Body)
		}
		var page itemPage
		r.JSON(t, &page)
		if len(page.Items) > limit {
			t.Fatalf("page of %d with limit %d", len(page.Items), limit)
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" || (most >= 0 && len(all) >= most) {
			return all
		}
		cursor = page.NextCursor
	}
	t.Fatal("the library never ends")
	return nil
}

// inOrder fails unless items are in order: newest first (or the order
// left out) by lastModified descending, ties by id descending; oldest
// first both ascending.
func inOrder(t *testing.T, what string, items []itemBody, order string) {
	t.Helper()
	for i := 1; i < len(items); i++ {
		a, b := items[i-1], items[i]
		c := a.LastModified.Compare(b.LastModified)
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		if (order == "oldest" && c >= 0) || (order != "oldest" && c <= 0) {
			t.Fatalf("%s, order %q: item %d (%s at %v) before item %d (%s at %v)", what, order, i-1, a.ID, a.LastModified, i, b.ID, b.LastModified)
		}
	}
}

// ids lists the items' ids.
func ids(items []itemBody) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// unshare takes a principal off an item.
func unshare(api *testkit.API, contentID, principalID string) *testkit.Response {
	return api.Do(http.MethodDelete, "/v1/content/"+contentID+"/members/"+principalID, "", nil)
}
