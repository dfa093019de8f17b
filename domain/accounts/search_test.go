package accounts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"shelf/domain"
)

// indexOf is a search index in memory: rows in position order, each
// returned when it holds every gram asked for, as the storage-attached
// index does; it counts its reads.
type indexOf struct {
	rows  []domain.Found
	reads int
}

func (x *indexOf) Search(_ context.Context, grams []string, after int64, n int) ([]domain.Found, error) {
	x.reads++
	var out []domain.Found
	for _, f := range x.rows {
		held := domain.SearchGrams(f.User.UsernameKey, f.User.EmailKey)
		if f.Position > after && len(out) < n && !slices.ContainsFunc(grams, func(g string) bool { return !slices.Contains(held, g) }) {
			out = append(out, f)
		}
	}
	return out, nil
}

// People returns the rows whose username prefixes hold prefix, as the
// storage-attached index on username_prefixes does.
func (x *indexOf) People(_ context.Context, prefix string, after int64, n int) ([]domain.FoundProfile, error) {
	x.reads++
	var out []domain.FoundProfile
	for _, f := range x.rows {
		if f.Position > after && len(out) < n && slices.Contains(domain.UsernamePrefixes(f.User.UsernameKey), prefix) {
			out = append(out, domain.FoundProfile{Profile: f.User.Profile(), Position: f.Position})
		}
	}
	return out, nil
}

// searcher is a service whose caller is an active admin, over index.
func searcher(index *indexOf) (*Service, domain.Principal) {
	a := New(Config{Search: index}, nil, nil, nil, nil, nil)
	admin := domain.Access{ID: "u_admin", Roles: []string{domain.RoleAdmin}, Status: domain.StatusActive}
	return a, domain.Principal{UserID: admin.ID, Account: &admin}
}

// TestSearchPagesShowOnlyTheQuerysMatches: rows that hold the grams but
// not the query, and rows of accounts that are not visible, are read and
// left out; every match comes once across pages, none skipped; a page
// whose refills ran out on rows left out comes shorter, with a cursor
// past what it read.
func TestSearchPagesShowOnlyTheQuerysMatches(t *testing.T) {
	t.Parallel()
	index := &indexOf{}
	var want []string
	for i := range 60 {
		u := domain.User{ID: fmt.Sprintf("u_%02d", i), Status: domain.StatusActive, EmailKey: fmt.Sprintf("m%d@example.org", i)}
		switch {
		case i%6 == 0: // a match
			u.UsernameKey = fmt.Sprintf("xabcdx%d", i)
			want = append(want, u.ID)
		case i%6 == 1: // a match, not visible
			u.UsernameKey, u.Status = fmt.Sprintf("abcd%d", i), domain.StatusPending
		case i%6 == 2:
			u.UsernameKey, u.Status = fmt.Sprintf("abcd%d", i), domain.StatusDeleting
		default: // the grams of abcd, not abcd
			u.UsernameKey = fmt.Sprintf("abcxbcd%d", i)
		}
		index.rows = append(index.rows, domain.Found{User: u, Position: int64(i*10 - 300)})
	}
	a, admin := searcher(index)
	for _, limit := range []int{1, 3, 10, 100} {
		var got []string
		cursor, pages := "", 0
		for {
			pages++
			page, err := a.SearchUsers(context.Background(), admin, "ABCD", cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(page.Items))
			}
			for _, u := range page.Items {
				got = append(got, u.ID)
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: found %v, want %v", limit, got, want)
		}
		if limit == 100 && pages != 1 {
			t.Errorf("limit 100: %d pages", pages)
		}
	}
	// One match, then more rows left out than the refills read: a short
	// page that goes on.
	index.rows = index.rows[:1]
	for i := range 40 {
		index.rows = append(index.rows, domain.Found{Position: int64(1000 + i),
			User: domain.User{ID: fmt.Sprintf("u_x%d", i), UsernameKey: "abcxbcd", Status: domain.StatusActive}})
	}
	index.rows = append(index.rows, domain.Found{Position: 5000, User: domain.User{ID: "u_last", UsernameKey: "abcd", Status: domain.StatusActive}})
	index.reads = 0
	page, err := a.SearchUsers(context.Background(), admin, "abcd", "", 2)
	if err != nil || len(page.Items) != 1 || page.Next == "" || index.reads != searchRefills+1 {
		t.Fatalf("a page past rows left out: %d items, next %q, %d reads, %v", len(page.Items), page.Next, index.reads, err)
	}
	page, err = a.SearchUsers(context.Background(), admin, "abcd", page.Next, 2)
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != "u_last" || page.Next != "" {
		t.Fatalf("the page after: %+v %v", page, err)
	}
}

// TestSearchRefusals: anonymous callers, non-admins, bad queries and
// cursors this search did not make.
func TestSearchRefusals(t *testing.T) {
	t.Parallel()
	a, admin := searcher(&indexOf{})
	ctx := context.Background()
	if _, err := a.SearchUsers(ctx, domain.Principal{}, "abc", "", 20); !errors.Is(err, domain.ErrUnauthorized) {
		t.Errorf("anonymous: %v", err)
	}
	plain := domain.Access{ID: "u_plain", Status: domain.StatusActive}
	if _, err := a.SearchUsers(ctx, domain.Principal{UserID: plain.ID, Account: &plain}, "abc", "", 20); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("a non-admin: %v", err)
	}
	for _, tc := range []struct{ q, cursor, field string }{
		{"ab", "", "q"},
		{strings.Repeat("a", 255), "", "q"},
		{"abc", "x", "cursor"},
		{"abc", domain.EncodeCursor("12", "3"), "cursor"},
		{"abc", domain.EncodeCursor("012"), "cursor"},
		{"abc", domain.EncodeCursor("-9223372036854775808"), "cursor"},
	} {
		_, err := a.SearchUsers(ctx, admin, tc.q, tc.cursor, 20)
		var de *domain.Error
		if !errors.As(err, &de) || !errors.Is(err, domain.ErrInvalid) || len(de.Fields) != 1 || de.Fields[0].Field != tc.field {
			t.Errorf("q %q cursor %q: %v, want a refusal naming %s", tc.q, tc.cursor, err, tc.field)
		}
	}
}

// TestPeopleSearchPagesShowOnlyVisibleStartsToASession: anonymous callers
// are refused; a prefix that is no start of a username is refused naming
// it; rows the index holds for the prefix whose account is not visible, or
// whose username (as the row says now) does not start with it, are left
// out; every match comes once across pages, and each page shows the
// public part alone.
func TestPeopleSearchPagesShowOnlyVisibleStartsToASession(t *testing.T) {
	t.Parallel()
	index := &indexOf{}
	var want []string
	for i := range 40 {
		u := domain.User{ID: fmt.Sprintf("u_%02d", i), Status: domain.StatusActive, UsernameKey: fmt.Sprintf("kim%d", i),
			EmailKey: fmt.Sprintf("kim%d@example.org", i)}
		u.Username = strings.ToUpper(u.UsernameKey)
		switch i % 4 {
		case 0:
			want = append(want, u.ID)
		case 1:
			u.Status = domain.StatusSuspended // found: a search says no more of a suspension than a profile
			want = append(want, u.ID)
		case 2:
			u.Status = domain.StatusPending
		default:
			u.Username = fmt.Sprintf("lee%d", i) // the index still holds the old name's starts
		}
		index.rows = append(index.rows, domain.Found{User: u, Position: int64(i*7 - 100)})
	}
	a, _ := searcher(index)
	user := domain.Access{ID: "u_user", Status: domain.StatusActive}
	session := domain.Principal{UserID: user.ID, Account: &user}
	if _, err := a.SearchPeople(context.Background(), domain.Principal{}, "ki", "", 10); !errors.Is(err, domain.ErrNoSession) {
		t.Fatalf("anonymous: %v", err)
	}
	var de *domain.Error
	if _, err := a.SearchPeople(context.Background(), session, "k", "", 10); !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "prefix" {
		t.Fatalf("a one-letter prefix: %v", err)
	}
	for _, limit := range []int{1, 4, 100} {
		var got []string
		cursor := ""
		for {
			page, err := a.SearchPeople(context.Background(), session, "KI", cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(page.Items))
			}
			for _, p := range page.Items {
				if p.Username != strings.ToUpper(p.Username) || !p.Status.Visible() {
					t.Fatalf("shown: %+v", p)
				}
				got = append(got, p.ID)
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: found %v, want %v", limit, got, want)
		}
	}
}

// TestSearchShowsNoChangePendingPastItsLink: a change of email pending
// past its link's life reads as none, not shown
// (docs/design/email-change.md), in the moderators' search as in a read
// of the account: the row still holds it until a write drops it.
func TestSearchShowsNoChangePendingPastItsLink(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	index := &indexOf{}
	for i, asked := range []time.Time{now.Add(-time.Hour), now.Add(-48 * time.Hour)} {
		index.rows = append(index.rows, domain.Found{Position: int64(i), User: domain.User{ID: fmt.Sprintf("u_%d", i),
			Status: domain.StatusActive, UsernameKey: fmt.Sprintf("abcd%d", i), EmailKey: fmt.Sprintf("abcd%d@example.org", i),
			PendingEmail: fmt.Sprintf("next%d@example.org", i), PendingEmailKey: fmt.Sprintf("next%d@example.org", i), PendingEmailAt: asked}})
	}
	a := New(Config{Search: index, Now: func() time.Time { return now }, Mail: Mail{VerifyTTL: 24 * time.Hour}}, nil, nil, nil, nil, nil)
	admin := domain.Access{ID: "u_admin", Roles: []string{domain.RoleAdmin}, Status: domain.StatusActive}
	page, err := a.SearchUsers(context.Background(), domain.Principal{UserID: admin.ID, Account: &admin}, "abcd", "", 10)
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("%+v %v", page, err)
	}
	if got := page.Items[0].Shown().PendingEmail; got != "next0@example.org" {
		t.Errorf("a change pending an hour shows %q", got)
	}
	if got := page.Items[1].Shown().PendingEmail; got != "" {
		t.Errorf("a change pending past its link shows %q", got)
	}
}
