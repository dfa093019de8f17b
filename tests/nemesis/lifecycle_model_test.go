package nemesis

import (
	"net/http"
	"sort"

	"shelf/tests/internal/checker"
)

// The lifecycle's checks that need no cluster: they judge a history (and,
// for deleted accounts, a snapshot of the tables read after healing), so
// the unit tests feed them small ones, legal or not by construction.

// checkResetTokens: a reset token works at most once (U8). Every 2xx
// confirmation of one token names the same password (a retry with that
// password may finish what an earlier attempt began, another password
// never), and no confirmation that started after one answered 2xx answers
// 2xx again (by then the token is done).
func checkResetTokens(events []event) verdict {
	v := verdict{Name: "U8 a reset token works at most once"}
	byToken := map[string][]event{}
	var tokens []string
	for _, e := range events {
		if e.Op != "reset-confirm" {
			continue
		}
		t := e.Args["token"]
		if _, ok := byToken[t]; !ok {
			tokens = append(tokens, t)
		}
		byToken[t] = append(byToken[t], e)
	}
	for _, t := range tokens {
		v.Checked++
		confirms := byToken[t]
		for _, a := range confirms {
			if !a.OK() {
				continue
			}
			for _, b := range confirms {
				switch {
				case !b.OK() || b.Seq == a.Seq:
				case b.Args["password"] != a.Args["password"] && a.Seq < b.Seq:
					v.Fail("token %s set two passwords: #%d and #%d both answered %d", t, a.Seq, b.Seq, b.Status)
				case b.Start.After(a.End):
					v.Fail("token %s worked again: #%d answered %d at %s, #%d sent after it answered %d",
						t, a.Seq, a.Status, a.End.Format("15:04:05.000"), b.Seq, b.Status)
				}
			}
		}
	}
	return v
}

// checkSessionsAfterReset: once a reset (or a password change) answered,
// no session from before it works (U8, S3): every request sent after that
// answer with a session opened by a login that started before it, with
// another password than the one the reset set, is refused 401. Logins in
// flight included: one that started before the answer and ended after it
// still opened a session from before the reset. A password change keeps
// its caller's own session.
func checkSessionsAfterReset(events []event) verdict {
	v := verdict{Name: "U8 no older session works after a reset"}
	logins := map[string][]event{} // account -> its logins that opened a session
	uses := map[string][]event{}   // session -> the requests that used it, answered
	for _, e := range events {
		switch {
		case e.Kind != "op":
		case e.Op == "login" && e.Status == http.StatusCreated && e.Result["session"] != "":
			logins[e.Result["user"]] = append(logins[e.Result["user"]], e)
		case e.Session != "" && !e.Indeterminate():
			uses[e.Session] = append(uses[e.Session], e)
		}
	}
	for _, c := range events {
		if (c.Op != "reset-confirm" && c.Op != "change-password") || !c.OK() {
			continue
		}
		v.Checked++
		keep := ""
		if c.Op == "change-password" {
			keep = c.Session
		}
		for _, l := range logins[c.Args["user"]] {
			s := l.Result["session"]
			if !l.Start.Before(c.End) || l.Args["password"] == c.Args["password"] || s == keep {
				continue
			}
			for _, u := range uses[s] {
				if u.Start.After(c.End) && u.Status != http.StatusUnauthorized {
					inFlight := ""
					if l.End.After(c.Start) {
						inFlight = " (a login in flight)"
					}
					v.Fail("%s answered %d at %s; then %s with the session of login #%d%s, from before it, answered %d",
						c.Op, c.Status, c.End.Format("15:04:05.000"), u.Op, l.Seq, inFlight, u.Status)
				}
			}
		}
	}
	return v
}

// lifecycleState is what the tables hold once the cluster healed and the
// repairs ran: each account's and group's status, and who is listed where.
type lifecycleState struct {
	users  map[string]string // account -> status
	groups map[string]string // group -> status
	// Each a list of (where, who): the row naming who as a member of
	// where, or where's list naming who.
	groupMembers   [][2]string // group_members (group, user)
	memberGroups   [][2]string // groups_by_member (group, user)
	contentMembers [][2]string // content_members of live items (item, principal)
	libraryIndex   [][2]string // library_index (item, principal)
	libraryRows    [][2]string // library_by_principal (item, principal)
	suspendedList  []string    // users_by_status rows of the suspended list
	suspendedUsers []string    // suspended_users lookups
}

// checkLifecycleState: nothing is left half deleted or half closed (the
// retries and the repairs finish every deletion and closing that began),
// and a deleted account is in no group's member list, no item's member
// list, no library and not in the suspended list.
func checkLifecycleState(s lifecycleState) verdict {
	v := verdict{Name: "deleted accounts listed nowhere, none stuck"}
	deleted := map[string]bool{}
	for _, id := range sortedKeys(s.users) {
		switch s.users[id] {
		case "deleted":
			v.Checked++
			deleted[id] = true
		case "deleting":
			v.Fail("account %s is still deleting after the repair", id)
		}
	}
	for _, id := range sortedKeys(s.groups) {
		if s.groups[id] == "closing" {
			v.Fail("group %s is still closing after the repair", id)
		}
	}
	for _, l := range []struct {
		what string
		rows [][2]string
	}{
		{"a member of group", s.groupMembers},
		{"listed in groups_by_member with group", s.memberGroups},
		{"a member of item", s.contentMembers},
		{"has library_index entry for", s.libraryIndex},
		{"has library row for", s.libraryRows},
	} {
		for _, r := range l.rows {
			if deleted[r[1]] {
				v.Fail("deleted account %s is %s %s", r[1], l.what, r[0])
			}
		}
	}
	for _, id := range s.suspendedList {
		if deleted[id] {
			v.Fail("deleted account %s is in the suspended list", id)
		}
	}
	for _, id := range s.suspendedUsers {
		if deleted[id] {
			v.Fail("deleted account %s has a suspension lookup (suspended_users)", id)
		}
	}
	return v
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// closings is deletions for groups. A group is "maybe" closed too when a
// deletion of its creator may have applied: a deletion closes the groups
// its account is alone in.
func closings(events []event) map[string]string {
	out := map[string]string{}
	deleted := checker.Deletions(events)
	for _, e := range events {
		if e.Op == "group-create" && e.Result["id"] != "" && deleted[e.Args["by"]] != "" {
			out[e.Result["id"]] = "maybe"
		}
	}
	return checker.Outcomes(events, "group-close", "group", out)
}
