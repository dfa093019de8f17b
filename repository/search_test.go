//go:build integration

package repository_test

import (
	"context"
	"math"
	"testing"
	"time"

	"shelf/domain"
	"shelf/repository"
	"shelf/tests/testkit"
)

// TestSearchIndexFollowsTheRow: the grams are written by the account's
// own compare-and-sets, so the index answers what the row says now: a
// pending row is found (the domain leaves it out), an activated one, a
// renamed one by its new key and not its old, a deleted one (keys
// cleared) by nothing; positions increase and page.
func TestSearchIndexFollowsTheRow(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.NewDB(t).Session, "LOCAL_SERIAL")
	users, search := repository.NewUsers(db), repository.NewUserSearch(db)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	u := domain.User{ID: domain.NewID(domain.UserIDPrefix), Username: "Zq.Search", UsernameKey: "zq.search",
		Email: "zq@example.org", EmailKey: "zq@example.org", Status: domain.StatusPending, CreatedAt: now, UpdatedAt: now, Version: 1}
	tag, err := users.Create(ctx, u, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	find := func(grams ...string) []domain.Found {
		t.Helper()
		found, err := search.Search(ctx, grams, math.MinInt64, 10)
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	if f := find("zq.", "rch"); len(f) != 1 || f[0].User.ID != u.ID || f[0].User.Status != domain.StatusPending {
		t.Fatalf("the pending row: %+v", f)
	}
	people := func(prefix string) []domain.FoundProfile {
		t.Helper()
		found, err := search.People(ctx, prefix, math.MinInt64, 10)
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	if f := people("zq.s"); len(f) != 1 || f[0].Profile.Username != "Zq.Search" || f[0].Position != find("zq.")[0].Position {
		t.Fatalf("the pending row by its start: %+v", f)
	}
	if f := people("search"); len(f) != 0 {
		t.Fatalf("found by a part that is not a start: %+v", f)
	}
	u.Status = domain.StatusActive
	if ok, err := users.Activate(ctx, u, tag); !ok || err != nil {
		t.Fatalf("activate: %v %v", ok, err)
	}
	u.Username, u.UsernameKey, u.Version = "Yw.Other", "yw.other", 2
	if ok, err := users.Update(ctx, u); !ok || err != nil {
		t.Fatalf("rename: %v %v", ok, err)
	}
	if f := find("rch"); len(f) != 0 {
		t.Fatalf("found by the old name: %+v", f)
	}
	if f := find("yw.", "her"); len(f) != 1 || f[0].User.UsernameKey != "yw.other" {
		t.Fatalf("by the new name: %+v", f)
	}
	if f := find("zq@"); len(f) != 1 {
		t.Fatalf("by the email: %+v", f)
	}
	if f, g := people("zq"), people("yw.other"); len(f) != 0 || len(g) != 1 || g[0].Profile.Status != domain.StatusActive {
		t.Fatalf("after the rename, by the old start %+v, by the new %+v", f, g)
	}
	u.Username, u.UsernameKey, u.Email, u.EmailKey, u.Status, u.Version = "", "", "", "", domain.StatusDeleted, 3
	if ok, err := users.Update(ctx, u); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if f := find("zq@"); len(f) != 0 {
		t.Fatalf("the deleted row is found: %+v", f)
	}
	if f := people("yw"); len(f) != 0 {
		t.Fatalf("the deleted row is found by its start: %+v", f)
	}
}
