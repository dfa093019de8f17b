//go:build integration

package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// readmeStory is the README's "The API in four steps": the shell block
// under that heading.
var readmeStory = regexp.MustCompile("(?s)## The API in four steps\n.*?```sh\n(.*?)```")

// TestTheREADMEStoryRuns runs the README's API story as written, in bash
// with curl and python3 (what the README asks to install), against a
// server of its own in place of make run's localhost:8080, then checks
// what the story says happened: both signups and the share answered
// without a problem, alice's library lists the item, an anonymous caller's
// page of it lists nothing, and bob is a member. The front door's example
// cannot drift from the API unseen.
func TestTheREADMEStoryRuns(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := readmeStory.FindSubmatch(raw)
	if m == nil {
		t.Fatal(`README.md has no "## The API in four steps" with a sh block`)
	}
	_, api := newTestApp(t, testkit.NewDB(t), nil)
	host := strings.TrimPrefix(api.Server.URL, "http://")
	script := strings.ReplaceAll(string(m[1]), "localhost:8080", host) +
		"\necho \"STORY USER_ID=$USER_ID BOB_ID=$BOB_ID CID=$CID TOKEN=$TOKEN\"\n"
	if strings.Count(script, host) < 8 {
		t.Fatalf("the story calls %s fewer times than its four steps need:\n%s", host, script)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's story failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if strings.Contains(out, `"code":`) {
		t.Errorf("a step of the story answered a problem:\n%s", out)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "STORY "); ok {
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = v
			}
		}
	}
	for _, k := range []string{"USER_ID", "BOB_ID", "CID", "TOKEN"} {
		if vars[k] == "" {
			t.Fatalf("the story left %s empty:\n%s", k, out)
		}
	}
	alice := api.As(vars["TOKEN"])
	var page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if r := alice.Get("/v1/users/" + vars["USER_ID"] + "/library?limit=20"); r.StatusCode != http.StatusOK {
		t.Fatalf("alice's library: %d %s", r.StatusCode, r.Body)
	} else if r.JSON(t, &page); len(page.Items) != 1 || page.Items[0].ID != vars["CID"] {
		t.Errorf("alice's library after the story: %s, want the item %s", r.Body, vars["CID"])
	}
	if r := api.Get("/v1/users/" + vars["USER_ID"] + "/library?limit=20"); r.StatusCode != http.StatusOK {
		t.Fatalf("the anonymous page: %d %s", r.StatusCode, r.Body)
	} else if r.JSON(t, &page); len(page.Items) != 0 {
		t.Errorf("an anonymous caller sees the private item: %s", r.Body)
	}
	members := pageAll[struct {
		PrincipalID string `json:"principalId"`
	}](t, alice, "/v1/content/"+vars["CID"]+"/members", 100)
	shared := false
	for _, mb := range members {
		shared = shared || mb.PrincipalID == vars["BOB_ID"]
	}
	if !shared {
		t.Errorf("bob is no member of the item after the story: %+v", members)
	}
}
