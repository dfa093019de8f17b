package nemesis

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"shelf/tests/internal/checker"
)

// at builds a request of the history from second a to second b.
func at(a, b int, op string, status int, args, result map[string]string, fields ...string) event {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return event{Kind: "op", Op: op, Start: t0.Add(time.Duration(a) * time.Second), End: t0.Add(time.Duration(b) * time.Second),
		Status: status, Args: args, Result: result, Fields: fields}
}

func signupOf(a, b, status int, username, email, id string, fields ...string) event {
	var result map[string]string
	if id != "" {
		result = map[string]string{"id": id}
	}
	return at(a, b, "signup", status, map[string]string{"username": username, "email": email}, result, fields...)
}

func renameOf(a, b, status int, user, username string, fields ...string) event {
	return at(a, b, "rename", status, map[string]string{"user": user, "username": username}, nil, fields...)
}

// emailChangeOf is an admin asking for a new email for user: pending, its
// key held beside the account's own.
func emailChangeOf(a, b, status int, user, email string, fields ...string) event {
	return at(a, b, "email-change", status, map[string]string{"user": user, "email": email}, nil, fields...)
}

func loginOf(a, b int, login, user string) event {
	return at(a, b, "login", 201, map[string]string{"login": login}, map[string]string{"user": user})
}

// TestClaimModel feeds the per-key checker small histories, each legal or
// not by construction.
func TestClaimModel(t *testing.T) {
	t.Parallel()
	horizon := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		events []event
		final  map[string]string
		legal  bool
	}{
		{"one winner, one 409", []event{
			signupOf(0, 2, 201, "ann", "a@x", "U1"),
			signupOf(3, 4, 409, "ann", "b@x", "", "username"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1"}, true},
		{"two winners one after the other", []event{
			signupOf(0, 2, 201, "ann", "a@x", "U1"),
			signupOf(3, 4, 201, "ann", "b@x", "U2"),
		}, map[string]string{"usernames/ann": "U2", "emails/a@x": "U1", "emails/b@x": "U2"}, false},
		{"two winners, a rename between", []event{
			signupOf(0, 2, 201, "ann", "a@x", "U1"),
			renameOf(2, 3, 200, "U1", "bob"),
			signupOf(3, 4, 201, "ann", "b@x", "U2"),
		}, map[string]string{"usernames/ann": "U2", "usernames/bob": "U1", "emails/a@x": "U1", "emails/b@x": "U2"}, true},
		{"a 409 when nobody could hold the key", []event{
			signupOf(0, 2, 409, "ann", "a@x", "", "username"),
		}, map[string]string{}, false},
		{"a 409 behind a signup of unknown outcome", []event{
			signupOf(0, 2, 503, "ann", "a@x", ""),
			signupOf(5, 6, 409, "ann", "b@x", "", "username"),
		}, map[string]string{}, true},
		{"a 409 behind a loser whose claim waits for its lease", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			signupOf(2, 3, 409, "ann", "b@x", "", "username"), // b@x held for a while
			signupOf(4, 5, 409, "cid", "b@x", "", "email"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1"}, true},
		{"a 409 long after a loser's lease ran out", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			signupOf(2, 3, 409, "ann", "b@x", "", "username"),
			signupOf(40, 41, 409, "cid", "b@x", "", "email"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1"}, false},
		{"a login by a name its account left", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			renameOf(2, 3, 200, "U1", "bob"),
			loginOf(4, 5, "ann", "U1"),
		}, map[string]string{"usernames/bob": "U1", "emails/a@x": "U1"}, false},
		{"a login by a name of a rename of unknown outcome", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			renameOf(2, 3, 0, "U1", "bob"),
			loginOf(4, 5, "ann", "U1"),
			loginOf(6, 7, "bob", "U1"),
		}, map[string]string{"usernames/bob": "U1", "emails/a@x": "U1"}, true},
		{"an unknown signup's account turns up", []event{
			signupOf(0, 1, 0, "ann", "a@x", ""),
			loginOf(30, 31, "ann", "U9"),
		}, map[string]string{"usernames/ann": "U9", "emails/a@x": "U9"}, true},
		{"a known account holds a key it never won", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			signupOf(2, 3, 0, "cid", "c@x", ""),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1", "usernames/cid": "U1"}, false},
		{"an email asked for is held, then given back by the next", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			emailChangeOf(2, 3, 200, "U1", "b@x"),
			signupOf(4, 5, 409, "bob", "b@x", "", "email"),
			emailChangeOf(6, 7, 200, "U1", "c@x"),
			signupOf(8, 9, 201, "bob", "b@x", "U2"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1", "emails/c@x": "U1", "usernames/bob": "U2", "emails/b@x": "U2"}, true},
		{"an email asked for taken by a signup meanwhile", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			emailChangeOf(2, 3, 200, "U1", "b@x"),
			signupOf(4, 5, 201, "bob", "b@x", "U2"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1", "usernames/bob": "U2", "emails/b@x": "U2"}, false},
		{"the account's own email taken while a change is pending", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			emailChangeOf(2, 3, 200, "U1", "b@x"),
			signupOf(4, 5, 201, "bob", "a@x", "U2"),
		}, map[string]string{"usernames/ann": "U1", "emails/b@x": "U1", "usernames/bob": "U2", "emails/a@x": "U2"}, false},
		{"two regions both win one email for two accounts", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			signupOf(0, 1, 201, "bob", "b@x", "U2"),
			emailChangeOf(2, 4, 200, "U1", "c@x"),
			emailChangeOf(2, 4, 200, "U2", "c@x"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1", "usernames/bob": "U2", "emails/b@x": "U2", "emails/c@x": "U2"}, false},
		{"an acknowledged signup lost", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
		}, map[string]string{"emails/a@x": "U1"}, false},
		// Two renames to one free name, each answered 409: one held it
		// pending while the other looked, lost its account's
		// compare-and-set to another change, gave it back and found the
		// other's claim on its next round.
		{"two renames that held the name in turn, both 409", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			signupOf(0, 1, 201, "bob", "b@x", "U2"),
			renameOf(2, 4, 409, "U1", "cid", "username"),
			renameOf(3, 5, 409, "U2", "cid", "username"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1", "usernames/bob": "U2", "emails/b@x": "U2"}, true},
		// The winner's first round held the name while the 409 looked,
		// then lost its account's compare-and-set to another rename of
		// the account and gave the name back; its next round won.
		{"a 409 behind a winner's earlier round", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			signupOf(0, 1, 201, "bob", "b@x", "U2"),
			renameOf(2, 8, 200, "U1", "cid"),
			renameOf(3, 4, 409, "U2", "cid", "username"),
			renameOf(5, 6, 200, "U1", "dan"),
		}, map[string]string{"usernames/cid": "U1", "emails/a@x": "U1", "usernames/bob": "U2", "emails/b@x": "U2"}, true},
		{"a rename's 409 is not its own excuse", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			renameOf(2, 4, 409, "U1", "cid", "username"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1"}, false},
		{"a 409 long after another 409's lease ran out", []event{
			signupOf(0, 1, 201, "ann", "a@x", "U1"),
			signupOf(0, 1, 201, "bob", "b@x", "U2"),
			renameOf(2, 4, 409, "U1", "cid", "username"),
			renameOf(50, 51, 409, "U2", "cid", "username"),
		}, map[string]string{"usernames/ann": "U1", "emails/a@x": "U1", "usernames/bob": "U2", "emails/b@x": "U2"}, false},
	} {
		ops, known := checker.ClaimHistory(numbered(tc.events...), horizon, tc.final)
		if got := porcupine.CheckOperations(checker.ClaimModel(known), ops); got != tc.legal {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.legal)
		}
	}
}
