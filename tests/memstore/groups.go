package memstore

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
)

// groupTables are the groups' tables: the group rows (compare-and-set,
// pending ones with a lease), group_members and groups_by_member.
type groupTables struct {
	rows     map[string]groupRow
	members  map[string]versioned[groups.Member]   // group|user
	byMember map[string]versioned[groups.MemberOf] // user|group
}

type groupRow struct {
	g       groups.Group
	expires time.Time // zero: never
	// tag is the write_id of the create attempt that wrote a pending row
	// (Create answers it, Activate takes only its row); the repository's
	// every other write tags the row anew, "" here.
	tag string
}

func newGroupTables() groupTables {
	return groupTables{rows: map[string]groupRow{}, members: map[string]versioned[groups.Member]{},
		byMember: map[string]versioned[groups.MemberOf]{}}
}

// cloneGroup copies a group (its pending change is a pointer).
func cloneGroup(g groups.Group) groups.Group {
	if g.Pending != nil {
		p := *g.Pending
		g.Pending = &p
	}
	return g
}

func (s *Store) liveGroup(id string) (groupRow, bool) {
	r, ok := s.groups.rows[id]
	if ok && !r.expires.IsZero() && !s.now.Before(r.expires) {
		delete(s.groups.rows, id)
		return groupRow{}, false
	}
	return r, ok
}

// Groups is the store as the groups' group store.
func (s *Store) Groups() groups.Store { return groupStore{s} }

type groupStore struct{ s *Store }

// Create is one attempt of the insert, under a tag of its own: a held one
// lands with its tag, as the repository's attempts each carry theirs.
func (t groupStore) Create(_ context.Context, g groups.Group, lease time.Duration) (string, error) {
	tag := domain.NewAttempt()
	applied, err := t.s.call("groups.create", true, func() (bool, error) {
		if _, ok := t.s.liveGroup(g.ID); ok {
			return false, nil
		}
		t.s.groups.rows[g.ID] = groupRow{g: cloneGroup(g), expires: t.s.now.Add(lease), tag: tag}
		return true, nil
	})
	if err == nil && !applied {
		return "", errors.New("memstore: groups.create: id exists")
	}
	if err != nil {
		return "", err
	}
	return tag, nil
}

func (t groupStore) Activate(_ context.Context, g groups.Group, tag string) (bool, error) {
	return t.s.call("groups.activate", true, func() (bool, error) {
		r, ok := t.s.liveGroup(g.ID)
		if !ok || r.g.Status != domain.StatusPending || r.tag != tag {
			return false, nil
		}
		t.s.groups.rows[g.ID] = groupRow{g: cloneGroup(g)}
		return true, nil
	})
}

func (t groupStore) Discard(_ context.Context, id string) error {
	_, err := t.s.call("groups.discard", true, func() (bool, error) {
		if r, ok := t.s.liveGroup(id); ok && r.g.Status == domain.StatusPending {
			delete(t.s.groups.rows, id)
			return true, nil
		}
		return false, nil
	})
	return err
}

func (t groupStore) Get(_ context.Context, id string) (groups.Group, error) {
	var out groups.Group
	found, err := t.s.call("groups.get", false, func() (bool, error) {
		r, ok := t.s.liveGroup(id)
		out = cloneGroup(r.g)
		return ok, nil
	})
	if err == nil && !found {
		return groups.Group{}, domain.ErrNotFound
	}
	return out, err
}

func (t groupStore) GetSerial(ctx context.Context, id string) (groups.Group, error) {
	return t.Get(ctx, id)
}

func (t groupStore) Update(_ context.Context, g groups.Group) (bool, error) {
	return t.s.call("groups.update", true, func() (bool, error) {
		r, ok := t.s.liveGroup(g.ID)
		if !ok || r.g.Version != g.Version-1 {
			return false, nil
		}
		// Every column without a TTL: as on Cassandra, a pending group an
		// update reaches outlives its lease.
		t.s.groups.rows[g.ID] = groupRow{g: cloneGroup(g)}
		return true, nil
	})
}

// GroupMembers is the store as the groups' member store.
func (s *Store) GroupMembers() groups.MemberStore { return groupMembers{s} }

type groupMembers struct{ s *Store }

// Apply writes both tables at version, one call each: a removal deletes
// the reverse index row first, then the member row, as the repository
// does; an addition writes the member row and the reverse index row,
// trying both whatever fails, as the repository sends the two at once.
func (m groupMembers) Apply(_ context.Context, groupID string, c groups.MemberChange, version int) error {
	t, ts := &m.s.groups, int64(version)
	write := func(name string, apply func()) error {
		_, err := m.s.call(name, true, func() (bool, error) { apply(); return true, nil })
		return err
	}
	if c.Role == "" {
		if err := write("groups_by_member.delete", func() { deleteAt(t.byMember, c.UserID+"|"+groupID, ts) }); err != nil {
			return err
		}
		return write("group_members.delete", func() { deleteAt(t.members, groupID+"|"+c.UserID, ts) })
	}
	return errors.Join(
		write("group_members.insert", func() { putAt(t.members, groupID+"|"+c.UserID, groups.Member(c), ts) }),
		write("groups_by_member.insert", func() {
			putAt(t.byMember, c.UserID+"|"+groupID, groups.MemberOf{GroupID: groupID, Role: c.Role}, ts)
		}),
	)
}

func (m groupMembers) Role(_ context.Context, groupID, userID string) (string, error) {
	var role string
	found, err := m.s.call("group_members.role", false, func() (bool, error) {
		m.s.memberRows++
		c, ok := m.s.groups.members[groupID+"|"+userID]
		role = c.v.Role
		return ok && !c.deleted, nil
	})
	if err == nil && !found {
		return "", domain.ErrNotFound
	}
	return role, err
}

// all lists a group's live members by user id (under the lock).
func (m groupMembers) all(groupID string) []groups.Member {
	return partition(m.s.groups.members, groupID, memberUser)
}

func memberUser(mb groups.Member) string { return mb.UserID }

func (m groupMembers) Page(_ context.Context, groupID, after string, limit int) ([]groups.Member, error) {
	var out []groups.Member
	_, err := m.s.call("group_members.page", false, func() (bool, error) {
		out = pageAfter(m.all(groupID), after, limit, memberUser)
		m.s.memberRows += len(out)
		return true, nil
	})
	return out, err
}

// groupsOf lists a user's live reverse index rows by group id (under the
// lock).
func (m groupMembers) groupsOf(userID string) []groups.MemberOf {
	return partition(m.s.groups.byMember, userID, memberOfGroup)
}

func memberOfGroup(r groups.MemberOf) string { return r.GroupID }

// GroupsOf lists the user's groups by id: nil when there are none, where
// the repository's answers an empty list.
func (m groupMembers) GroupsOf(_ context.Context, userID string) ([]string, error) {
	var out []string
	_, err := m.s.call("groups_by_member.list", false, func() (bool, error) {
		for _, r := range m.groupsOf(userID) {
			out = append(out, r.GroupID)
		}
		m.s.memberRows += len(out)
		return true, nil
	})
	return out, err
}

// GroupsAmong reads the user's reverse index rows of groupIDs by key.
func (m groupMembers) GroupsAmong(_ context.Context, userID string, groupIDs []string) ([]string, error) {
	out := []string{}
	if len(groupIDs) == 0 {
		return out, nil
	}
	_, err := m.s.call("groups_by_member.among", false, func() (bool, error) {
		m.s.memberRows += len(groupIDs)
		for _, id := range groupIDs {
			if r, ok := m.s.groups.byMember[userID+"|"+id]; ok && !r.deleted && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return true, nil
	})
	return out, err
}

func (m groupMembers) GroupsPage(_ context.Context, userID, after string, limit int) ([]groups.MemberOf, error) {
	var out []groups.MemberOf
	_, err := m.s.call("groups_by_member.page", false, func() (bool, error) {
		out = pageAfter(m.groupsOf(userID), after, limit, memberOfGroup)
		m.s.memberRows += len(out)
		return true, nil
	})
	return out, err
}

// GroupSnapshot is every live group with its members and, per user, the
// groups the reverse index lists.
type GroupSnapshot struct {
	Groups   []groups.Group
	Members  map[string][]groups.Member // by group id
	GroupsOf map[string][]string        // by user id
}

// GroupSnapshot reads the groups' tables.
func (s *Store) GroupSnapshot() GroupSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := GroupSnapshot{Members: map[string][]groups.Member{}, GroupsOf: map[string][]string{}}
	for id := range s.groups.rows {
		if r, ok := s.liveGroup(id); ok {
			snap.Groups = append(snap.Groups, cloneGroup(r.g))
			snap.Members[id] = groupMembers{s}.all(id)
		}
	}
	sort.Slice(snap.Groups, func(i, j int) bool { return snap.Groups[i].ID < snap.Groups[j].ID })
	for k, c := range s.groups.byMember {
		if !c.deleted {
			user := k[:len(k)-len(c.v.GroupID)-1]
			snap.GroupsOf[user] = append(snap.GroupsOf[user], c.v.GroupID)
		}
	}
	return snap
}
