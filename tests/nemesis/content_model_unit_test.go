package nemesis

import (
	"testing"
)

func contentOp(a, b int, op string, status int, args map[string]string) event {
	return at(a, b, op, status, args, nil)
}

// TestContentModel checks items against small histories, each allowing
// what it says.
func TestContentModel(t *testing.T) {
	t.Parallel()
	create := at(0, 1, "content-create", 201, map[string]string{"owner": "U1", "visibility": "public"}, map[string]string{"id": "C1"})
	update := func(a, b, status int, name string) event {
		return contentOp(a, b, "content-update", status, map[string]string{"content": "C1", "name": name, "visibility": "private"})
	}
	share := func(a, b, status int, principal, role string) event {
		return contentOp(a, b, "content-share", status, map[string]string{"content": "C1", "principal": principal, "role": role})
	}
	unshare := func(a, b, status int, principal string) event {
		return contentOp(a, b, "content-unshare", status, map[string]string{"content": "C1", "principal": principal})
	}
	item := func(name, vis string, members map[string]string) itemState {
		return itemState{live: true, name: name, visibility: vis, members: members}
	}
	owner := map[string]string{"U1": "manager"}
	for _, tc := range []struct {
		name   string
		events []event
		state  itemState
		ok     bool
	}{
		{"as created", []event{create}, item("item", "public", owner), true},
		{"an update lost", []event{create, update(2, 3, 200, "a")}, item("item", "public", owner), false},
		{"the older of two updates", []event{create, update(2, 3, 200, "a"), update(4, 5, 200, "b")}, item("a", "private", owner), false},
		{"either of two concurrent updates", []event{create, update(2, 5, 200, "a"), update(3, 4, 200, "b")}, item("a", "private", owner), true},
		{"an update of unknown outcome, not applied", []event{create, update(2, 3, 0, "a")}, item("item", "public", owner), true},
		{"an update of unknown outcome, applied", []event{create, update(2, 3, 503, "a")}, item("a", "private", owner), true},
		{"a refused update applied", []event{create, update(2, 3, 409, "a")}, item("a", "private", owner), false},
		{"a share lost", []event{create, share(2, 3, 200, "U2", "viewer")}, item("item", "public", owner), false},
		{"a share kept", []event{create, share(2, 3, 200, "U2", "viewer")},
			item("item", "public", map[string]string{"U1": "manager", "U2": "viewer"}), true},
		{"an unshare lost", []event{create, share(2, 3, 200, "U2", "viewer"), unshare(4, 5, 204, "U2")},
			item("item", "public", map[string]string{"U1": "manager", "U2": "viewer"}), false},
		{"a member nobody shared with", []event{create}, item("item", "public", map[string]string{"U1": "manager", "U3": "viewer"}), false},
		{"a delete lost", []event{create, contentOp(2, 3, "content-delete", 204, map[string]string{"content": "C1"})}, item("item", "public", owner), false},
	} {
		v := checkContentModel(tc.events, map[string]itemState{"C1": tc.state})
		if v.Checked != 1 || (len(v.Violations) == 0) != tc.ok {
			t.Errorf("%s: checked %d, violations %v, want ok %v", tc.name, v.Checked, v.Violations, tc.ok)
		}
	}
}
