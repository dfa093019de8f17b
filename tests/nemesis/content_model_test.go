package nemesis

import (
	"math"
	"slices"
	"sort"
)

// itemState is an item as it is once everything has settled, read as an
// admin.
type itemState struct {
	live       bool
	name       string
	visibility string
	members    map[string]string // user id -> role
}

// register is one value an item has (its name and visibility, whether it
// is live, one principal's role), as the history's writes leave it. Each
// write is a request that changed it: acknowledged, or of unknown outcome
// (open-ended: it may have applied at any time after it started, or not
// at all). A request the service refused (4xx) is not a write.
type register struct {
	writes []write
}

type write struct {
	start, end int64 // end is math.MaxInt64 when the outcome is unknown
	value      string
	acked      bool
}

func (r *register) add(e event, value string) {
	w := write{start: e.Start.UnixNano(), end: e.End.UnixNano(), value: value, acked: true}
	if e.Status == 0 || e.Status >= 500 {
		w.end, w.acked = math.MaxInt64, false
	}
	r.writes = append(r.writes, w)
}

// finals are the values the register may end with: those of the writes
// that no acknowledged write started after (a linearizable register ends
// with the value of a write nothing acknowledged came strictly after).
func (r *register) finals() []string {
	var out []string
	for _, w := range r.writes {
		superseded := slices.ContainsFunc(r.writes, func(o write) bool { return o.acked && o.start > w.end })
		if !superseded {
			out = append(out, w.value)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// itemModel is what the acknowledged operations say of one item.
type itemModel struct {
	attrs   register            // "name|visibility"
	live    register            // "live" or "deleted"
	members map[string]register // principal -> "none", "viewer" or "manager"
	created write               // the creation, the first write of every principal's role
	creator string
	// creatorShared: a share or unshare named the creator (it may no
	// longer manage the item).
	creatorShared bool
}

// contentModel builds every item's model from the history: the items whose
// creation answered 201, with every later update, share, unshare and
// delete of them that was acknowledged or whose outcome is unknown, and
// every deletion of an account that was a member of them.
func contentModel(events []event) map[string]*itemModel {
	items := map[string]*itemModel{}
	var deletions []event
	for _, e := range events {
		if e.Kind == "op" && e.Op == "delete-account" {
			deletions = append(deletions, e)
			continue
		}
		if e.Kind != "op" {
			continue
		}
		if e.Op == "content-create" && e.Status == 201 && e.Result["id"] != "" {
			m := &itemModel{members: map[string]register{}, creator: e.Args["owner"]}
			m.attrs.add(e, "item|"+e.Args["visibility"])
			m.live.add(e, "live")
			m.created = m.attrs.writes[0]
			m.members[m.creator] = register{writes: []write{{start: m.created.start, end: m.created.end, value: "manager", acked: true}}}
			items[e.Result["id"]] = m
			continue
		}
		m := items[e.Args["content"]]
		applied := e.Status >= 200 && e.Status < 300 || e.Status == 0 || e.Status >= 500
		if m == nil || !applied {
			continue
		}
		switch e.Op {
		case "content-update":
			m.attrs.add(e, e.Args["name"]+"|"+e.Args["visibility"])
		case "content-delete":
			m.live.add(e, "deleted")
		case "content-share", "content-unshare":
			p := e.Args["principal"]
			m.creatorShared = m.creatorShared || p == m.creator
			r, ok := m.members[p]
			if !ok {
				r.writes = []write{{start: m.created.start, end: m.created.end, value: "none", acked: true}}
			}
			role := e.Args["role"]
			if e.Op == "content-unshare" {
				role = "none"
			}
			r.add(e, role)
			m.members[p] = r
		}
	}
	for _, e := range deletions {
		if !e.OK() && !e.Indeterminate() {
			continue
		}
		for _, m := range items {
			m.deletedAccount(e)
		}
	}
	return items
}

// deletedAccount applies the deletion e of an account (2xx, or of unknown
// outcome) to the item: the account is a member no more, and the item is
// deleted when the account made it and manages it, or was its last
// manager. The deletion unshares or deletes each item of the account's
// library at some point within its request, so its role ends "none"
// whatever came before. Whether it was the last manager the history does
// not say, so that deletion may or may not happen; when the account is
// the item's creator and nobody ever shared or unshared the item with it
// (it is still the item's manager), the deletion surely deletes the item.
func (m *itemModel) deletedAccount(e event) {
	user := e.Args["user"]
	r, member := m.members[user]
	if !member {
		return
	}
	r.add(e, "none")
	m.members[user] = r
	var maybeManager, kept bool
	for _, w := range r.writes {
		maybeManager = maybeManager || w.value == "manager"
	}
	kept = user == m.creator && !m.creatorShared
	switch {
	case kept:
		m.live.add(e, "deleted")
	case maybeManager:
		m.live.writes = append(m.live.writes, write{start: e.Start.UnixNano(), end: math.MaxInt64, value: "deleted"})
	}
}

// checkContentModel compares every item as it is with its model: live or
// deleted, its name and visibility, each principal's role, each a value
// the acknowledged operations allow; and no member the history never
// shared it with.
func checkContentModel(events []event, items map[string]itemState) verdict {
	v := verdict{Name: "L1-L4 items match the acknowledged ops"}
	for id, m := range contentModel(events) {
		s, read := items[id]
		if !read {
			continue
		}
		v.Checked++
		live := map[bool]string{true: "live", false: "deleted"}[s.live]
		if finals := m.live.finals(); !slices.Contains(finals, live) {
			v.Fail("%s is %s, the history allows %v", id, live, finals)
		}
		if !s.live {
			continue
		}
		if got, finals := s.name+"|"+s.visibility, m.attrs.finals(); !slices.Contains(finals, got) {
			v.Fail("%s is %q, the history allows %q", id, got, finals)
		}
		for p, r := range m.members {
			got := s.members[p]
			if got == "" {
				got = "none"
			}
			if finals := r.finals(); !slices.Contains(finals, got) {
				v.Fail("%s: %s's role is %s, the history allows %v", id, p, got, finals)
			}
		}
		for p := range s.members {
			if _, ok := m.members[p]; !ok {
				v.Fail("%s lists member %s, whom the history never shared it with", id, p)
			}
		}
	}
	return v
}
