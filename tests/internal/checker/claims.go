package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The per-key model of claims. Each username, each email and each group
// name is a register holding the account (or group) that holds the key, or
// nobody (""); a deletion or a closing frees its owner's keys within its
// request, so a key is taken again only once its holder is deleted or
// closed; porcupine checks
// that the history's steps on each key can be put in an order, each within
// its request's interval, that this register allows. A step whose outcome
// the history does not know (no answer, a 5xx) is open-ended: it may have
// happened at any time up to the check, or not at all; a signup, a rename
// or an email change of unknown outcome may hold the key for good, under the account id it was
// for (a signup's id is unknown, so it holds as "signup:<seq>" until a read
// names the account; a group creation's as "create:<seq>").
//
// A signup or a rename that did not win may still have held the key for a
// while: its pending claim, or one whose release failed and waits for its
// lease. So may any attempt in an earlier round of its own: a rename whose
// account's compare-and-set lost to another change of the account (a
// suspension, an email change, another rename) gives its claim back and
// looks again, and may then win on its next round, or find the key held
// by another such attempt and answer 409 itself. A 409 naming the key is
// checked only when no other attempt on it could have held it then (one
// that started before the 409 ended and, unless it won, ended less than
// excuse before it started, or whose outcome is unknown): a held claim is
// a 409's only other cause.

// claimStep is what one request does to one key.
type claimStep struct {
	Key  string // "usernames/<key>" or "emails/<key>"
	What string // acquire, taken, mayhold, release, read
	Who  string // who holds it by this step: an account id, or "signup:<seq>"
	// Maybe: the request's outcome is unknown; a release may also leave
	// the key as it was.
	Maybe bool
	Seq   int64
}

// ClaimModel is the register; known are the ids that 201 signups
// returned (a read naming any other id may name an unknown signup's).
func ClaimModel(known map[string]bool) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range ops {
				k := op.Input.(claimStep).Key
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() []any { return []any{""} },
		Step: func(state, input, _ any) []any {
			holder, s := state.(string), input.(claimStep)
			return claimNext(holder, s, known)
		},
		DescribeOperation: func(input, _ any) string {
			s := input.(claimStep)
			maybe := ""
			if s.Maybe {
				maybe = "?"
			}
			return fmt.Sprintf("#%d %s%s %s", s.Seq, s.What, maybe, s.Who)
		},
		DescribeState: func(state any) string {
			if state.(string) == "" {
				return "free"
			}
			return state.(string)
		},
	}
	return nm.ToModel()
}

// claimNext is the register's step: the holders the key may have after s,
// none when s cannot happen with the key held by holder.
func claimNext(holder string, s claimStep, known map[string]bool) []any {
	switch s.What {
	case "acquire": // a 201 signup, a 200 rename: the key was free (or ours)
		if holder == "" || holder == s.Who {
			return []any{s.Who}
		}
	case "taken": // a 409 naming the key: someone else held it
		if holder != "" && holder != s.Who {
			return []any{holder}
		}
	case "mayhold": // a request of unknown outcome may have taken the key for good
		if holder == "" {
			return []any{"", s.Who}
		}
		return []any{holder}
	case "release": // a rename moved s.Who to another key
		if holder != s.Who {
			return []any{holder}
		}
		if s.Maybe {
			return []any{"", holder}
		}
		return []any{""}
	case "read": // a login or the final scan: the key is s.Who's ("" nobody's)
		if holder == s.Who {
			return []any{holder}
		}
		if s.Who != "" && unnamed(holder) && !known[s.Who] {
			return []any{s.Who} // now we know the unknown signup's (or creation's) id
		}
	}
	return nil
}

// unnamed reports a holder the history knows only by its request: a
// signup or a group creation of unknown outcome.
func unnamed(holder string) bool {
	return strings.HasPrefix(holder, "signup:") || strings.HasPrefix(holder, "create:")
}

// excuse is how long after its answer a losing attempt's claim may still
// hold a key: the lease of a pending claim (10 s in the nemesis run) after
// a write held back by a hung node (at most 12 s) lands.
const excuse = 30 * time.Second

// ClaimHistory turns the history into steps per key. horizon is when the
// check reads the database: open-ended steps end there; final holds the
// holder of every key the database shows (active or suspended accounts).
func ClaimHistory(events []Event, horizon time.Time, final map[string]string) (ops []porcupine.Operation, known map[string]bool) {
	known = map[string]bool{}
	end := horizon.UnixNano()
	add := func(e Event, s claimStep, openEnded bool) {
		s.Seq = e.Seq
		ret := e.End.UnixNano()
		if openEnded {
			ret = end
		}
		ops = append(ops, porcupine.Operation{ClientId: e.Worker, Input: s, Call: e.Start.UnixNano(), Return: ret})
	}
	candidates := map[string]map[string]bool{} // key -> who may hold it
	candidate := func(key, who string) {
		if candidates[key] == nil {
			candidates[key] = map[string]bool{}
		}
		candidates[key][who] = true
	}
	type span struct {
		from, to int64
		seq      int64 // the attempt's
	}
	tries := map[string][]span{} // key -> when attempts may have held it in a round they gave up
	var taken []Event
	var takenKeys []string
	// attempt adds the steps of a signup or a rename on one key.
	attempt := func(e Event, key, field, winner, as string) {
		// A group creation answered 401 may have been closed with its
		// creator's deletion after creating the group (closeDeparted in
		// domain/groups): the closing holds the name until its repair
		// finishes it, as long after the answer as it takes.
		unknown := e.Status == 0 || e.Status >= 500 || (e.Op == "group-create" && e.Status == http.StatusUnauthorized)
		switch {
		case e.Status >= 200 && e.Status < 300:
			add(e, claimStep{Key: key, What: "acquire", Who: winner}, false)
			candidate(key, winner)
			tries[key] = append(tries[key], span{e.Start.UnixNano(), e.End.UnixNano(), e.Seq})
		case e.Status == http.StatusConflict && slices.Contains(e.Fields, field):
			taken, takenKeys = append(taken, e), append(takenKeys, key)
			tries[key] = append(tries[key], span{e.Start.UnixNano(), e.End.Add(excuse).UnixNano(), e.Seq})
		case unknown:
			add(e, claimStep{Key: key, What: "mayhold", Who: as, Maybe: true}, true)
			candidate(key, as)
			tries[key] = append(tries[key], span{e.Start.UnixNano(), end, e.Seq})
		default:
			tries[key] = append(tries[key], span{e.Start.UnixNano(), e.End.Add(excuse).UnixNano(), e.Seq})
		}
	}
	var renames, emailChanges, ends []Event
	signedUpWith := map[string]string{} // account -> the email key its 201 signup took
	made := map[string][]string{}       // account -> the groups it created
	for _, e := range events {
		if e.Kind != "op" {
			continue
		}
		switch e.Op {
		case "signup":
			own := fmt.Sprintf("signup:%d", e.Seq)
			winner := e.Result["id"]
			if winner != "" {
				known[winner] = true
			}
			attempt(e, "usernames/"+e.Args["username"], "username", winner, own)
			attempt(e, "emails/"+e.Args["email"], "email", winner, own)
			if winner != "" {
				signedUpWith[winner] = "emails/" + e.Args["email"]
			}
		case "email-change": // a new email asked for: held, pending, beside the account's own
			user := e.Args["user"]
			attempt(e, "emails/"+e.Args["email"], "email", user, user)
			emailChanges = append(emailChanges, e)
		case "rename":
			user := e.Args["user"]
			attempt(e, "usernames/"+e.Args["username"], "username", user, user)
			renames = append(renames, e)
		case "group-create":
			winner := e.Result["id"]
			if winner != "" {
				known[winner] = true
				made[e.Args["by"]] = append(made[e.Args["by"]], winner)
			}
			attempt(e, "group_names/"+e.Args["name"], "name", winner, fmt.Sprintf("create:%d", e.Seq))
		case "delete-account", "group-close":
			ends = append(ends, e)
		case "login":
			if e.Status == http.StatusCreated && !strings.Contains(e.Args["login"], "@") {
				add(e, claimStep{Key: "usernames/" + e.Args["login"], What: "read", Who: e.Result["user"]}, false)
			}
		}
	}
	// A 409 no other attempt's round explains: someone else held the key.
	for i, e := range taken {
		from, to := e.Start.UnixNano(), e.End.UnixNano()
		excused := slices.ContainsFunc(tries[takenKeys[i]], func(l span) bool { return l.seq != e.Seq && l.from <= to && l.to >= from })
		if !excused {
			who := e.Args["user"] // a rename's account; "" for a signup
			add(e, claimStep{Key: takenKeys[i], What: "taken", Who: who}, false)
		}
	}
	// A rename that applied gives back the account's other usernames; an
	// email change, the address asked for before (one pending at a time),
	// never the account's own: that one stays until the new one is
	// verified, which the histories never do.
	giveBack := func(changes []Event, prefix, arg string) {
		for _, e := range changes {
			unknown := e.Status == 0 || e.Status >= 500
			if !unknown && (e.Status < 200 || e.Status >= 300) {
				continue
			}
			user, to := e.Args["user"], prefix+e.Args[arg]
			for key, who := range candidates {
				if who[user] && key != to && key != signedUpWith[user] && strings.HasPrefix(key, prefix) {
					add(e, claimStep{Key: key, What: "release", Who: user, Maybe: unknown}, unknown)
				}
			}
		}
	}
	giveBack(renames, "usernames/", "username")
	giveBack(emailChanges, "emails/", "email")
	// A deletion or a closing that applied gives back every name of the
	// account or the group: once its job finished, at some point from its
	// request's start (from then the owner is deleting or closing and
	// still holds them) up to the check (202: the job finishes by then,
	// the workers and the repairs having run); of unknown outcome, at any
	// time up to the check or never.
	for _, e := range ends {
		unknown := e.Status == 0 || e.Status >= 500
		if !unknown && (e.Status < 200 || e.Status >= 300) {
			continue
		}
		later := unknown || e.Status == http.StatusAccepted
		owner, prefixes := e.Args["user"], []string{"usernames/", "emails/"}
		if e.Op == "group-close" {
			owner, prefixes = e.Args["group"], []string{"group_names/"}
		}
		for key, who := range candidates {
			if who[owner] && slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(key, p) }) {
				add(e, claimStep{Key: key, What: "release", Who: owner, Maybe: unknown}, later)
			}
			// A deletion closes the groups its account is alone in:
			// those it created may be.
			for _, g := range made[owner] {
				if e.Op == "delete-account" && who[g] && strings.HasPrefix(key, "group_names/") {
					add(e, claimStep{Key: key, What: "release", Who: g, Maybe: true}, later)
				}
			}
		}
	}
	// The final read of every key the history touched.
	keys := make([]string, 0, len(candidates))
	for _, op := range ops {
		keys = append(keys, op.Input.(claimStep).Key)
	}
	sort.Strings(keys)
	keys = slices.Compact(keys)
	for _, key := range keys {
		ops = append(ops, porcupine.Operation{Input: claimStep{Key: key, What: "read", Who: final[key], Seq: -1}, Call: end + 1, Return: end + 1})
	}
	return ops, known
}

// CheckTablesAndClaims checks U1 twice after a run: on the tables, as
// read (CheckKeys through read), and per key with porcupine (CheckClaims),
// the tables' holders being every key's last read. The holders go to
// holders.json in dir too, for a later recheck of the claims.
func CheckTablesAndClaims(ctx context.Context, read func(context.Context) (Verdict, map[string]string, error), events []Event, dir string) (tables, claims Verdict, err error) {
	horizon := time.Now()
	tables, holders, err := read(ctx)
	if err != nil {
		return tables, Verdict{}, err
	}
	if b, err := json.Marshal(holders); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "holders.json"), b, 0o644)
	}
	return tables, CheckClaims(events, horizon, holders, dir), nil
}

// CheckClaims checks with porcupine that the history's claims are
// linearizable per key (U1), with the database's holders read at horizon
// as the last read of every key. The steps of a key that cannot be
// linearized go to claims-<n>.html in dir, porcupine's picture of them.
func CheckClaims(events []Event, horizon time.Time, holders map[string]string, dir string) Verdict {
	v := Verdict{Name: "U1 claims linearizable per key (porcupine)"}
	ops, known := ClaimHistory(events, horizon, holders)
	model := ClaimModel(known)
	for _, part := range model.Partition(ops) {
		v.Checked++
		result, info := porcupine.CheckOperationsVerbose(model, part, time.Minute)
		if result == porcupine.Ok {
			continue
		}
		key := part[0].Input.(claimStep).Key
		if result == porcupine.Unknown {
			v.Fail("%s: porcupine could not decide within a minute (%d steps)", key, len(part))
			continue
		}
		sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		// Each step with its interval, in seconds from the first's start.
		var steps string
		for _, op := range part {
			from, to := float64(op.Call-part[0].Call)/1e9, float64(op.Return-part[0].Call)/1e9
			steps += fmt.Sprintf("\n      %s [%.3f, %.3f]", model.DescribeOperation(op.Input, nil), from, to)
		}
		path := filepath.Join(dir, fmt.Sprintf("claims-%d.html", len(v.Violations)))
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			path = err.Error()
		}
		v.Fail("%s: no order of its %d steps keeps one holder at a time (%s):%s", key, len(part), path, steps)
	}
	return v
}
