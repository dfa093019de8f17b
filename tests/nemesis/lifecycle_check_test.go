//go:build nemesis

package nemesis

import (
	"context"
	"time"

	"shelf/repository"
	"shelf/tests/testkit"
)

// readLifecycleState reads, straight from the tables, every account's and
// group's status and every row that lists an account somewhere: group
// members both ways, the members of live items, library entries and rows,
// the suspended list and its lookups.
func readLifecycleState(ctx context.Context) (lifecycleState, error) {
	st := lifecycleState{users: map[string]string{}, groups: map[string]string{}}
	s, err := repository.Connect(ctx, testkit.ConnConfig(addresses[:], "nemesis"), time.Minute)
	if err != nil {
		return st, err
	}
	defer s.Close()
	scan := func(cql string, each func(a, b string)) error {
		iter := s.ContextQuery(ctx, cql, nil).Iter()
		var a, b string
		for iter.Scan(&a, &b) {
			each(a, b)
		}
		return iter.Close()
	}
	pair := func(list *[][2]string) func(a, b string) {
		return func(a, b string) { *list = append(*list, [2]string{a, b}) }
	}
	liveItems := map[string]bool{}
	var members [][2]string
	var deletedItem bool
	iter := s.ContextQuery(ctx, "SELECT id, deleted FROM content", nil).Iter()
	var id string
	for iter.Scan(&id, &deletedItem) {
		if !deletedItem {
			liveItems[id] = true
		}
	}
	if err := iter.Close(); err != nil {
		return st, err
	}
	for _, q := range []struct {
		cql  string
		each func(a, b string)
	}{
		{"SELECT id, status FROM users", func(a, b string) { st.users[a] = b }},
		{"SELECT id, status FROM groups", func(a, b string) { st.groups[a] = b }},
		{"SELECT group_id, user_id FROM group_members", pair(&st.groupMembers)},
		{"SELECT group_id, user_id FROM groups_by_member", pair(&st.memberGroups)},
		{"SELECT content_id, principal_id FROM content_members", pair(&members)},
		{"SELECT content_id, principal_id FROM library_index", pair(&st.libraryIndex)},
		{"SELECT content_id, principal_id FROM library_by_principal", pair(&st.libraryRows)},
		{"SELECT user_id, status FROM users_by_status", func(a, b string) {
			if b == "suspended" {
				st.suspendedList = append(st.suspendedList, a)
			}
		}},
		{"SELECT user_id, bucket FROM suspended_users", func(a, _ string) { st.suspendedUsers = append(st.suspendedUsers, a) }},
	} {
		if err := scan(q.cql, q.each); err != nil {
			return st, err
		}
	}
	for _, m := range members {
		if liveItems[m[0]] {
			st.contentMembers = append(st.contentMembers, m)
		}
	}
	return st, nil
}
