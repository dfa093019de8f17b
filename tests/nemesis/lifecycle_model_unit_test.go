package nemesis

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"shelf/tests/internal/checker"
)

// numbered gives each event its place in the history.
func numbered(events ...event) []event {
	for i := range events {
		events[i].Seq = int64(i + 1)
	}
	return events
}

func confirmOf(a, b, status int, token, password string) event {
	return at(a, b, "reset-confirm", status, map[string]string{"user": "U1", "token": token, "password": password}, nil)
}

// TestResetTokenRule feeds the token check small histories: a token sets
// one password, once.
func TestResetTokenRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		events []event
		ok     bool
	}{
		{"one use", []event{confirmOf(0, 1, 204, "T", "p1")}, true},
		{"refused, then used", []event{confirmOf(0, 1, 400, "T", "p1"), confirmOf(2, 3, 204, "T", "p2")}, true},
		{"unknown, then used with another password", []event{confirmOf(0, 1, 503, "T", "p1"), confirmOf(2, 3, 204, "T", "p2")}, true},
		{"two at once with one password (a retry)", []event{confirmOf(0, 3, 204, "T", "p1"), confirmOf(1, 2, 204, "T", "p1")}, true},
		{"used, then refused", []event{confirmOf(0, 1, 204, "T", "p1"), confirmOf(2, 3, 400, "T", "p2")}, true},
		{"two tokens, each once", []event{confirmOf(0, 1, 204, "T", "p1"), confirmOf(2, 3, 204, "S", "p2")}, true},
		{"two at once with two passwords", []event{confirmOf(0, 3, 204, "T", "p1"), confirmOf(1, 2, 204, "T", "p2")}, false},
		{"used, then used again with another password", []event{confirmOf(0, 1, 204, "T", "p1"), confirmOf(2, 3, 204, "T", "p2")}, false},
		{"used, then used again with the same password", []event{confirmOf(0, 1, 204, "T", "p1"), confirmOf(2, 3, 204, "T", "p1")}, false},
	} {
		v := checkResetTokens(numbered(tc.events...))
		if (len(v.Violations) == 0) != tc.ok {
			t.Errorf("%s: violations %v, want ok %v", tc.name, v.Violations, tc.ok)
		}
	}
}

// loginAs is a login of U1 with password that opened session.
func loginAs(a, b int, password, session string) event {
	return at(a, b, "login", 201, map[string]string{"user": "U1", "login": "ann", "password": password},
		map[string]string{"user": "U1", "session": session})
}

// use is a request with session answered status.
func use(a, b, status int, session string) event {
	e := at(a, b, "me", status, map[string]string{"user": "U1"}, nil)
	e.Session = session
	return e
}

func changeOf(a, b, status int, password, session string) event {
	e := at(a, b, "change-password", status, map[string]string{"user": "U1", "password": password}, nil)
	e.Session = session
	return e
}

// TestSessionsAfterResetRule feeds the session check small histories: no
// session from before a reset works once it answered.
func TestSessionsAfterResetRule(t *testing.T) {
	t.Parallel()
	reset := confirmOf(10, 12, 204, "T", "new")
	for _, tc := range []struct {
		name   string
		events []event
		ok     bool
	}{
		{"an old session refused after", []event{loginAs(0, 1, "old", "S"), reset, use(13, 14, 401, "S")}, true},
		{"an old session used before the answer", []event{loginAs(0, 1, "old", "S"), use(11, 13, 200, "S"), reset}, true},
		{"an old session works after", []event{loginAs(0, 1, "old", "S"), reset, use(13, 14, 200, "S")}, false},
		{"an old session, forbidden after", []event{loginAs(0, 1, "old", "S"), reset, use(13, 14, 403, "S")}, false},
		{"an old session, no answer after", []event{loginAs(0, 1, "old", "S"), reset, use(13, 14, 503, "S")}, true},
		{"a login in flight survives", []event{loginAs(9, 13, "old", "S"), reset, use(14, 15, 200, "S")}, false},
		{"a login in flight refused after", []event{loginAs(9, 13, "old", "S"), reset, use(14, 15, 401, "S")}, true},
		{"a login with the new password in flight", []event{loginAs(11, 13, "new", "S"), reset, use(14, 15, 200, "S")}, true},
		{"a login after the answer", []event{reset, loginAs(13, 14, "old", "S"), use(15, 16, 200, "S")}, true},
		{"a refused reset ends nothing", []event{loginAs(0, 1, "old", "S"), confirmOf(10, 12, 400, "T", "new"), use(13, 14, 200, "S")}, true},
		{"a reset of unknown outcome is not checked", []event{loginAs(0, 1, "old", "S"), confirmOf(10, 12, 503, "T", "new"), use(13, 14, 200, "S")}, true},
		{"another account's session", []event{
			at(0, 1, "login", 201, map[string]string{"user": "U2", "password": "old"}, map[string]string{"user": "U2", "session": "S"}),
			reset, use(13, 14, 200, "S")}, true},
		{"a password change keeps its caller's session", []event{
			loginAs(0, 1, "old", "S"), changeOf(10, 12, 200, "new", "S"), use(13, 14, 200, "S")}, true},
		{"a password change ends the others", []event{
			loginAs(0, 1, "old", "S"), loginAs(2, 3, "old", "R"), changeOf(10, 12, 200, "new", "S"), use(13, 14, 200, "R")}, false},
	} {
		v := checkSessionsAfterReset(numbered(tc.events...))
		if (len(v.Violations) == 0) != tc.ok {
			t.Errorf("%s: violations %v, want ok %v", tc.name, v.Violations, tc.ok)
		}
	}
}

func deletionOf(a, b, status int, user string) event {
	return at(a, b, "delete-account", status, map[string]string{"user": user}, nil)
}

func groupCreateOf(a, b, status int, name, id string, fields ...string) event {
	var result map[string]string
	if id != "" {
		result = map[string]string{"id": id}
	}
	return at(a, b, "group-create", status, map[string]string{"name": name}, result, fields...)
}

func closingOf(a, b, status int, id, name string) event {
	return at(a, b, "group-close", status, map[string]string{"group": id, "name": name}, nil)
}

// TestNameTakenAgainOnlyAfterItsHolderIsGone: a username, an email or a
// group name is taken again only once its holder's deletion or closing
// began (and it is released once its job finished, by the check at the
// latest: a 409 after the request answered 202 is legal).
func TestNameTakenAgainOnlyAfterItsHolderIsGone(t *testing.T) {
	t.Parallel()
	horizon := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	second := map[string]string{"usernames/ann": "U2", "emails/a@x": "U2"}
	for _, tc := range []struct {
		name   string
		events []event
		final  map[string]string
		legal  bool
	}{
		{"taken again after the deletion", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"), deletionOf(2, 3, 202, "U1"), signupOf(4, 5, 201, "ann", "a@x", "U2"),
		}, second, true},
		{"taken again during the deletion", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"), deletionOf(2, 6, 202, "U1"), signupOf(4, 5, 201, "ann", "a@x", "U2"),
		}, second, true},
		{"taken again before the deletion began", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"), signupOf(2, 3, 201, "ann", "a@x", "U2"), deletionOf(4, 5, 202, "U1"),
		}, second, false},
		{"taken again after a refused deletion", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"), deletionOf(2, 3, 409, "U1"), signupOf(4, 5, 201, "ann", "b@x", "U2"),
		}, map[string]string{"usernames/ann": "U2", "emails/a@x": "U1", "emails/b@x": "U2"}, false},
		{"taken again after a deletion of unknown outcome", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"), deletionOf(2, 3, 503, "U1"), signupOf(4, 5, 201, "ann", "a@x", "U2"),
		}, second, true},
		{"a deleted account still holding its name", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"), deletionOf(2, 3, 202, "U1"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1"}, false},
		{"a 409 after the deletion answered, its job still running", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"), deletionOf(2, 3, 202, "U1"), signupOf(4, 5, 409, "ann", "b@x", "", "username"),
			signupOf(6, 7, 201, "ann", "b@x", "U2"),
		}, map[string]string{"usernames/ann": "U2", "emails/b@x": "U2"}, true},
		{"a 409 while the deletion runs", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"), deletionOf(2, 6, 202, "U1"), signupOf(3, 4, 409, "ann", "b@x", "", "username"),
		}, map[string]string{}, true},
		{"a group name taken again after the closing", []event{
			groupCreateOf(0, 1, 201, "g1", "G1"), closingOf(2, 3, 202, "G1", "g1"), groupCreateOf(4, 5, 201, "g1", "G2"),
		}, map[string]string{"group_names/g1": "G2"}, true},
		{"a group name taken twice", []event{
			groupCreateOf(0, 1, 201, "g1", "G1"), groupCreateOf(2, 3, 201, "g1", "G2"), closingOf(4, 5, 202, "G1", "g1"),
		}, map[string]string{"group_names/g1": "G2"}, false},
		{"a group name taken after a refused closing", []event{
			groupCreateOf(0, 1, 201, "g1", "G1"), closingOf(2, 3, 403, "G1", "g1"), groupCreateOf(4, 5, 201, "g1", "G2"),
		}, map[string]string{"group_names/g1": "G2"}, false},
		{"a group creation's 409 while its holder closes", []event{
			groupCreateOf(0, 1, 201, "g1", "G1"), closingOf(2, 6, 202, "G1", "g1"), groupCreateOf(3, 4, 409, "g1", "", "name"),
		}, map[string]string{}, true},
	} {
		ops, known := checker.ClaimHistory(numbered(tc.events...), horizon, tc.final)
		if got := porcupine.CheckOperations(checker.ClaimModel(known), ops); got != tc.legal {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.legal)
		}
	}
}

// TestDeletedAccountsListedNowhere feeds the final-state check a clean
// state and, one at a time, each place a deleted account must not be.
func TestDeletedAccountsListedNowhere(t *testing.T) {
	t.Parallel()
	clean := func() lifecycleState {
		return lifecycleState{
			users:          map[string]string{"U1": "deleted", "U2": "active"},
			groups:         map[string]string{"G1": "active", "G2": "closed"},
			groupMembers:   [][2]string{{"G1", "U2"}},
			memberGroups:   [][2]string{{"G1", "U2"}},
			contentMembers: [][2]string{{"C1", "U2"}},
			libraryIndex:   [][2]string{{"C1", "U2"}},
			libraryRows:    [][2]string{{"C1", "U2"}},
			suspendedList:  []string{"U2"},
			suspendedUsers: []string{"U2"},
		}
	}
	if v := checkLifecycleState(clean()); len(v.Violations) != 0 || v.Checked != 1 {
		t.Fatalf("a clean state: checked %d, violations %v", v.Checked, v.Violations)
	}
	for name, spoil := range map[string]func(*lifecycleState){
		"a group member":        func(s *lifecycleState) { s.groupMembers = append(s.groupMembers, [2]string{"G1", "U1"}) },
		"in groups_by_member":   func(s *lifecycleState) { s.memberGroups = append(s.memberGroups, [2]string{"G1", "U1"}) },
		"an item's member":      func(s *lifecycleState) { s.contentMembers = append(s.contentMembers, [2]string{"C1", "U1"}) },
		"a library entry":       func(s *lifecycleState) { s.libraryIndex = append(s.libraryIndex, [2]string{"C1", "U1"}) },
		"a library row":         func(s *lifecycleState) { s.libraryRows = append(s.libraryRows, [2]string{"C1", "U1"}) },
		"in the suspended list": func(s *lifecycleState) { s.suspendedList = append(s.suspendedList, "U1") },
		"a suspension lookup":   func(s *lifecycleState) { s.suspendedUsers = append(s.suspendedUsers, "U1") },
		"an account stuck":      func(s *lifecycleState) { s.users["U3"] = "deleting" },
		"a group stuck closing": func(s *lifecycleState) { s.groups["G3"] = "closing" },
	} {
		s := clean()
		spoil(&s)
		if v := checkLifecycleState(s); len(v.Violations) != 1 {
			t.Errorf("%s: violations %v, want one", name, v.Violations)
		}
	}
}

// TestContentModelWithDeletedAccounts: a deleted creator's item is
// deleted with it, a deleted member is a member no more.
func TestContentModelWithDeletedAccounts(t *testing.T) {
	t.Parallel()
	create := at(0, 1, "content-create", 201, map[string]string{"owner": "U1", "visibility": "public"}, map[string]string{"id": "C1"})
	share := contentOp(2, 3, "content-share", 200, map[string]string{"content": "C1", "principal": "U2", "role": "viewer"})
	live := func(members map[string]string) itemState {
		return itemState{live: true, name: "item", visibility: "public", members: members}
	}
	for _, tc := range []struct {
		name   string
		events []event
		state  itemState
		ok     bool
	}{
		{"the creator deleted, the item with it", []event{create, deletionOf(4, 5, 202, "U1")}, itemState{}, true},
		{"the creator deleted, the item kept", []event{create, deletionOf(4, 5, 202, "U1")}, live(map[string]string{}), false},
		{"the creator's deletion of unknown outcome", []event{create, deletionOf(4, 5, 503, "U1")},
			live(map[string]string{"U1": "manager"}), true},
		{"a member deleted, unshared", []event{create, share, deletionOf(4, 5, 202, "U2")},
			live(map[string]string{"U1": "manager"}), true},
		{"a member deleted, still a member", []event{create, share, deletionOf(4, 5, 202, "U2")},
			live(map[string]string{"U1": "manager", "U2": "viewer"}), false},
		{"a refused deletion changes nothing", []event{create, share, deletionOf(4, 5, 409, "U2")},
			live(map[string]string{"U1": "manager", "U2": "viewer"}), true},
	} {
		v := checkContentModel(tc.events, map[string]itemState{"C1": tc.state})
		if v.Checked != 1 || (len(v.Violations) == 0) != tc.ok {
			t.Errorf("%s: checked %d, violations %v, want ok %v", tc.name, v.Checked, v.Violations, tc.ok)
		}
	}
}

// TestGroupOfADeletedCreatorMayBeClosed: a deletion closes the groups its
// account is alone in, so their names may be taken again.
func TestGroupOfADeletedCreatorMayBeClosed(t *testing.T) {
	t.Parallel()
	horizon := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	create := at(2, 3, "group-create", 201, map[string]string{"name": "g1", "by": "U1"}, map[string]string{"id": "G1"})
	events := numbered(signupOf(0, 1, 201, "ann", "a@x", "U1"), create, deletionOf(4, 5, 202, "U1"), groupCreateOf(6, 7, 201, "g1", "G2"))
	ops, known := checker.ClaimHistory(events, horizon, map[string]string{"group_names/g1": "G2"})
	if !porcupine.CheckOperations(checker.ClaimModel(known), ops) {
		t.Error("the name of a group its creator's deletion closed cannot be taken again")
	}
	if got := closings(events)["G1"]; got != "maybe" {
		t.Errorf("closings says %q of the deleted creator's group, want maybe", got)
	}
}

// TestGroupCreationAnswered401MayHoldItsName: a creation whose creator's
// deletion ran meanwhile answers 401 after creating the group and
// beginning its closing, which holds the name until its repair finishes
// it; a later creation of the name may meet it taken. A creation refused
// for its input holds nothing.
func TestGroupCreationAnswered401MayHoldItsName(t *testing.T) {
	t.Parallel()
	horizon := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		status int
		ok     bool
	}{
		{"answered 401", 401, true},
		{"answered 400", 400, false},
	} {
		events := numbered(groupCreateOf(0, 1, tc.status, "g1", ""), groupCreateOf(40, 41, 409, "g1", "", "name"))
		ops, known := checker.ClaimHistory(events, horizon, map[string]string{})
		if got := porcupine.CheckOperations(checker.ClaimModel(known), ops); got != tc.ok {
			t.Errorf("%s, then the name taken: linearizable %v, want %v", tc.name, got, tc.ok)
		}
	}
}
