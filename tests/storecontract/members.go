package storecontract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/library"
)

// GroupMembers runs GroupMemberChecks.
func GroupMembers(t *testing.T, open Open[groups.MemberStore]) { Run(t, open, GroupMemberChecks) }

// GroupMemberChecks are groups.MemberStore's contract.
var GroupMemberChecks = []Check[groups.MemberStore]{
	{"ChangesFollowTheNewestVersion", groupMemberVersions},
	{"PagesInIDOrder", groupMemberPages},
	{"GroupsAmongReadsOnlyThoseAsked", groupsAmong},
}

// groupMemberVersions: both tables follow the newest change: an older one
// landing late loses, a removal wins a tie, and a write at the removal's
// version or older stays removed.
func groupMemberVersions(t testing.TB, s groups.MemberStore, _ Clock) {
	ctx, group, user := context.Background(), Key("group"), Key("user")
	role := func(want string) {
		t.Helper()
		got, err := s.Role(ctx, group, user)
		of, ofErr := s.GroupsOf(ctx, user)
		switch {
		case ofErr != nil:
			t.Fatal(ofErr)
		case want == "" && (!errors.Is(err, domain.ErrNotFound) || len(of) != 0):
			t.Fatalf("role %q %v, groups of the user %v: want no membership", got, err, of)
		case want != "" && (err != nil || got != want || !slices.Equal(of, []string{group})):
			t.Fatalf("role %q %v, groups of the user %v: want %q in %s", got, err, of, want, group)
		}
	}
	apply := func(r string, version int) {
		t.Helper()
		if err := s.Apply(ctx, group, groups.MemberChange{UserID: user, Role: r}, version); err != nil {
			t.Fatal(err)
		}
	}
	apply(groups.RoleMember, 3)
	apply(groups.RoleManager, 2)
	role(groups.RoleMember)
	apply("", 3)
	role("")
	apply(groups.RoleManager, 3)
	role("")
	apply(groups.RoleManager, 4)
	role(groups.RoleManager)
}

// groupMemberPages: a group's members page by user id, a user's groups by
// group id, each from the id after which it resumes.
func groupMemberPages(t testing.TB, s groups.MemberStore, _ Clock) {
	ctx, group, user := context.Background(), Key("group"), Key("user")
	var members, groupIDs []string
	for i := range 7 {
		m, g := fmt.Sprintf("%s-%d", user, i), fmt.Sprintf("%s-%d", group, i)
		members, groupIDs = append(members, m), append(groupIDs, g)
		for _, c := range []struct{ group, user string }{{group, m}, {g, user}} {
			if err := s.Apply(ctx, c.group, groups.MemberChange{UserID: c.user, Role: groups.RoleMember}, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Apply(ctx, group, groups.MemberChange{UserID: members[3]}, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, groupIDs[3], groups.MemberChange{UserID: user}, 1); err != nil {
		t.Fatal(err)
	}
	members, groupIDs = slices.Delete(members, 3, 4), slices.Delete(groupIDs, 3, 4)
	slices.Sort(members)
	slices.Sort(groupIDs)
	for _, limit := range []int{1, 2, 6} {
		pages(t, limit, func(last *groups.Member, limit int) ([]groups.Member, error) {
			after := ""
			if last != nil {
				after = last.UserID
			}
			return s.Page(ctx, group, after, limit)
		}, func(m groups.Member) string { return m.UserID }, members)
		pages(t, limit, func(last *groups.MemberOf, limit int) ([]groups.MemberOf, error) {
			after := ""
			if last != nil {
				after = last.GroupID
			}
			return s.GroupsPage(ctx, user, after, limit)
		}, func(m groups.MemberOf) string { return m.GroupID }, groupIDs)
	}
	all, err := s.GroupsOf(ctx, user)
	slices.Sort(all)
	if err != nil || !slices.Equal(all, groupIDs) {
		t.Fatalf("groups of the user: %v %v, want %v", all, err, groupIDs)
	}
}

// groupsAmong: GroupsAmong answers which of the ids asked the user is a
// member of, whatever else the user is in; none for none.
func groupsAmong(t testing.TB, s groups.MemberStore, _ Clock) {
	ctx, user := context.Background(), Key("user")
	var in []string
	for i := range 4 {
		g := fmt.Sprintf("%s-%d", Key("group"), i)
		in = append(in, g)
		if err := s.Apply(ctx, g, groups.MemberChange{UserID: user, Role: groups.RoleMember}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Apply(ctx, in[3], groups.MemberChange{UserID: user}, 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ask, want []string }{
		{[]string{in[0], in[2], Key("group")}, []string{in[0], in[2]}},
		{[]string{in[3], in[1]}, []string{in[1]}},
		{[]string{Key("group")}, nil},
		{nil, nil},
	} {
		got, err := s.GroupsAmong(ctx, user, tc.ask)
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if err != nil || len(got) != len(want) || (len(want) > 0 && !slices.Equal(got, want)) {
			t.Fatalf("GroupsAmong(%v) = %v %v, want %v", tc.ask, got, err, want)
		}
	}
}

// ContentMembers runs ContentMemberChecks.
func ContentMembers(t *testing.T, open Open[library.MemberStore]) { Run(t, open, ContentMemberChecks) }

// ContentMemberChecks are library.MemberStore's contract.
var ContentMemberChecks = []Check[library.MemberStore]{
	{"FollowTheNewestVersion", contentMemberVersions},
	{"PagesInPrincipalOrder", contentMemberPages},
	{"GroupsAreTheGroupMembers", contentMemberGroups},
}

// contentMemberGroups: Groups answers the item's members whose ids are
// group ids, and none of its users, whichever side of them they sort.
func contentMemberGroups(t testing.TB, s library.MemberStore, _ Clock) {
	ctx, item := context.Background(), Key("item")
	var want []string
	for i := range 3 {
		for _, prefix := range []string{domain.UserIDPrefix, domain.GroupIDPrefix} {
			p := domain.NewID(prefix)
			if prefix == domain.GroupIDPrefix {
				want = append(want, p)
			}
			if err := s.Put(ctx, item, library.Member{PrincipalID: p, Role: []string{library.RoleViewer, library.RoleManager}[i%2]}, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	gone := want[1]
	if err := s.Delete(ctx, item, gone, 2); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(p string) bool { return p == gone })
	slices.Sort(want)
	got, err := s.Groups(ctx, item)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(got))
	for i, m := range got {
		ids[i] = m.PrincipalID
	}
	slices.Sort(ids)
	if !slices.Equal(ids, want) {
		t.Fatalf("the item's groups: %v, want %v", ids, want)
	}
	if none, err := s.Groups(ctx, Key("item")); err != nil || len(none) != 0 {
		t.Fatalf("an item without members has groups %v %v", none, err)
	}
}

// contentMemberVersions: a member row follows the item's newest version;
// a delete wins a tie.
func contentMemberVersions(t testing.TB, s library.MemberStore, _ Clock) {
	ctx, item, p := context.Background(), Key("item"), Key("principal")
	find := func(want string) {
		t.Helper()
		got, err := s.Find(ctx, item, []string{p, "nobody"})
		switch {
		case err != nil:
			t.Fatal(err)
		case want == "" && len(got) != 0, want != "" && (len(got) != 1 || got[0].Role != want || got[0].PrincipalID != p):
			t.Fatalf("find: %+v, want role %q", got, want)
		}
	}
	put := func(role string, version int) {
		t.Helper()
		if err := s.Put(ctx, item, library.Member{PrincipalID: p, Role: role}, version); err != nil {
			t.Fatal(err)
		}
	}
	put(library.RoleViewer, 5)
	put(library.RoleManager, 4)
	find(library.RoleViewer)
	if err := s.Delete(ctx, item, p, 5); err != nil {
		t.Fatal(err)
	}
	find("")
	put(library.RoleManager, 5)
	find("")
	put(library.RoleManager, 6)
	find(library.RoleManager)
}

// contentMemberPages: an item's members page by principal id.
func contentMemberPages(t testing.TB, s library.MemberStore, _ Clock) {
	ctx, item := context.Background(), Key("item")
	var want []string
	for i := range 5 {
		p := fmt.Sprintf("%s-%d", Key("principal"), i)
		want = append(want, p)
		if err := s.Put(ctx, item, library.Member{PrincipalID: p, Role: library.RoleViewer}, 1); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	for _, limit := range []int{1, 2, 5} {
		pages(t, limit, func(last *library.Member, limit int) ([]library.Member, error) {
			after := ""
			if last != nil {
				after = last.PrincipalID
			}
			return s.Page(ctx, item, after, limit)
		}, func(m library.Member) string { return m.PrincipalID }, want)
	}
}
