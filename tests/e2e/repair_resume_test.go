//go:build integration

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelf/domain/moderation"
	"shelf/repository"
)

// progressRE finds the lines `repair-suspensions` prints as it goes: the
// phase, the share of its table read and the position to resume from.
var progressRE = regexp.MustCompile(`(?m)^(\w+) read: +(\d+)% \(to resume after here: --from (\w+):(-?\d+)\)$`)

// progressLine is one of them.
type progressLine struct {
	percent int
	at      string // as --from takes it
	token   int64
}

// progressOf returns the progress lines of one phase, in order.
func progressOf(t *testing.T, out, phase string) []progressLine {
	t.Helper()
	var lines []progressLine
	for _, m := range progressRE.FindAllStringSubmatch(out, -1) {
		if m[1] != m[3] {
			t.Fatalf("a line of the %s phase gives a position in %s:\n%s", m[1], m[3], m[0])
		}
		if m[1] != phase {
			continue
		}
		percent, _ := strconv.Atoi(m[2])
		token, _ := strconv.ParseInt(m[4], 10, 64)
		lines = append(lines, progressLine{percent, m[3] + ":" + m[4], token})
	}
	return lines
}

// byTenths checks a whole phase was read and reported every tenth.
func byTenths(t *testing.T, out, phase string) []progressLine {
	t.Helper()
	lines := progressOf(t, out, phase)
	if len(lines) != 11 || lines[0].percent != 0 || lines[10].percent != 100 {
		t.Fatalf("%s progress %v, want 0%% to 100%% by tenths:\n%s", phase, lines, out)
	}
	return lines
}

// unfinished returns the ids of the suspended accounts a repair reported
// without their reverse lookup.
func unfinished(out string) map[string]bool {
	ids := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "user" && strings.Contains(line, "reverse lookup current=false") {
			ids[f[1]] = true
		}
	}
	return ids
}

// unbacked returns the ids of the accounts a repair reported a record of
// kind ("reverse lookup", "list row") for that the account does not back.
func unbacked(out, kind string) map[string]bool {
	ids := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, kind+" of user "); ok && strings.Contains(rest, "is not backed by the account") {
			ids[strings.Fields(rest)[0]] = true
		}
	}
	return ids
}

// TestRepairResumesFromAPrintedPosition: the repair reads the accounts in
// token ranges and prints, every tenth, where it stands. Twelve
// suspensions stop after the account's compare-and-set (no records). A run
// resumed from the middle position (given bare, as the repair printed it
// before it had phases) fixes exactly the accounts after it; a full run
// fixes the rest; both can run with requests going on (a suspension made
// between them is left alone).
func TestRepairResumesFromAPrintedPosition(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	tokens := map[string]int64{}
	// Each suspension stops right after the account's compare-and-set, as
	// a crash would: none of its records is written.
	m.app.Moderation.Hooks.AfterStep = func(op, step string) error {
		if op == "suspend" && step == "cas" {
			return errCrash
		}
		return nil
	}
	for range 12 {
		u, _ := m.member(t)
		m.suspend(u.ID, "spam")
		var tok int64
		if err := m.db.Session.Query(`SELECT token(id) FROM users WHERE id = ?`, nil).Bind(u.ID).Scan(&tok); err != nil {
			t.Fatal(err)
		}
		tokens[u.ID] = tok
	}
	m.app.Moderation.Hooks.AfterStep = nil

	dry, err := runAdmin(t, m, "repair-suspensions", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	if got := unfinished(dry); len(got) != 12 {
		t.Fatalf("the dry run found %d accounts without their lookup, want 12:\n%s", len(got), dry)
	}
	for _, phase := range []string{"accounts", "lookups", "list"} {
		byTenths(t, dry, phase)
	}
	middle := byTenths(t, dry, "accounts")[5].token

	// Traffic goes on: another suspension, whole, between the runs.
	other, _ := m.member(t)
	if r := m.suspend(other.ID, "spam"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d", r.StatusCode)
	}

	out, err := runAdmin(t, m, "repair-suspensions", "--from", fmt.Sprint(middle))
	if err != nil {
		t.Fatal(err)
	}
	fixed := unfinished(out)
	for id, tok := range tokens {
		if fixed[id] != (tok > middle) {
			t.Errorf("account %s (token %d, resumed after %d): fixed %v", id, tok, middle, fixed[id])
		}
	}
	dry, err = runAdmin(t, m, "repair-suspensions", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	left := unfinished(dry)
	for id, tok := range tokens {
		if left[id] != (tok <= middle) {
			t.Errorf("after the resumed run, account %s (token %d) still broken: %v", id, tok, left[id])
		}
	}
	if _, err := runAdmin(t, m, "repair-suspensions"); err != nil {
		t.Fatal(err)
	}
	if out, err := runAdmin(t, m, "repair-suspensions", "--dry-run"); err != nil || !strings.Contains(out, "all records agree") {
		t.Fatalf("after a full run: %v\n%s", err, out)
	}
}

// staleRecords is an account whose lift stopped after the compare-and-set:
// its lookup and list row are left, where the scans of the lookups and of
// the list meet them.
type staleRecords struct {
	lookupToken int64 // token(user_id) of suspended_users
	listToken   int64 // token(bucket, status) of users_by_status
}

// plantStale leaves n accounts with the records of a lifted suspension,
// each in its own month's bucket (its own partition of the list).
func plantStale(t *testing.T, m *moderators, n int) map[string]staleRecords {
	t.Helper()
	out := map[string]staleRecords{}
	now := time.Now()
	clock := clockOf(t, m.app)
	defer clock.set(nil)
	for i := range n {
		at := now.AddDate(0, -i, 0)
		clock.set(func() time.Time { return at })
		u, _ := m.member(t)
		if r := m.suspend(u.ID, "spam"); r.StatusCode != http.StatusCreated {
			t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
		}
		m.app.Moderation.Hooks.AfterStep = func(op, step string) error {
			if op == "unsuspend" && step == "cas" {
				return errCrash
			}
			return nil
		}
		m.unsuspend(u.ID)
		m.app.Moderation.Hooks.AfterStep = nil
		var s staleRecords
		var bucket string
		if err := m.db.Session.Query(`SELECT token(user_id), bucket FROM suspended_users WHERE user_id = ?`, nil).Bind(u.ID).Scan(&s.lookupToken, &bucket); err != nil {
			t.Fatalf("the lookup of %s: %v", u.ID, err)
		}
		if err := m.db.Session.Query(`SELECT token(bucket, status) FROM users_by_status WHERE bucket = ? AND status = 'suspended' LIMIT 1`, nil).Bind(bucket).Scan(&s.listToken); err != nil {
			t.Fatalf("the list row of %s: %v", u.ID, err)
		}
		out[u.ID] = s
	}
	return out
}

// splitting returns the printed position that splits tokens most evenly,
// some at or before it and some after: a resume from it has work on both
// sides.
func splitting(t *testing.T, lines []progressLine, tokens []int64) progressLine {
	t.Helper()
	best, bestSide := progressLine{}, 0
	for _, l := range lines {
		before := 0
		for _, tok := range tokens {
			if tok <= l.token {
				before++
			}
		}
		// The most even split: the phase after it still has several
		// tokens to split in its turn.
		if side := min(before, len(tokens)-before); side > bestSide {
			best, bestSide = l, side
		}
	}
	if bestSide == 0 {
		t.Fatalf("no printed position among %v splits the tokens %v", lines, tokens)
	}
	return best
}

// TestRepairResumesInALaterPhase: a run stopped in the list phase, or in
// the lookups phase, resumes from a position it printed there. It reads
// none of the phases before (an account left without its records is not
// reported), and still erases the stale records planted after the
// position: the list rows after it in the list phase; the lookups after it
// in the lookups phase, the rest then through their list rows.
func TestRepairResumesInALaterPhase(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	stale := plantStale(t, m, 12)
	m.app.Moderation.Hooks.AfterStep = func(op, step string) error {
		if op == "suspend" && step == "cas" {
			return errCrash
		}
		return nil
	}
	unrecorded := map[string]bool{}
	for range 3 {
		u, _ := m.member(t)
		m.suspend(u.ID, "spam")
		unrecorded[u.ID] = true
	}
	m.app.Moderation.Hooks.AfterStep = nil

	dry, err := runAdmin(t, m, "repair-suspensions", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	if got := unfinished(dry); len(got) != len(unrecorded) {
		t.Fatalf("the dry run found %d accounts without their lookup, want %d:\n%s", len(got), len(unrecorded), dry)
	}
	if l, r := unbacked(dry, "reverse lookup"), unbacked(dry, "list row"); len(l) != len(stale) || len(r) != len(stale) {
		t.Fatalf("the dry run found %d stale lookups and %d stale list rows, want %d of each:\n%s", len(l), len(r), len(stale), dry)
	}
	lookupLines, listLines := byTenths(t, dry, "lookups"), byTenths(t, dry, "list")

	// Stopped in the list phase: resumed there, it erases the rows after.
	var listTokens []int64
	for _, s := range stale {
		listTokens = append(listTokens, s.listToken)
	}
	from := splitting(t, listLines, listTokens)
	out, err := runAdmin(t, m, "repair-suspensions", "--from", from.at)
	if err != nil {
		t.Fatal(err)
	}
	resumedOnlyIn(t, out, "list", from, unrecorded)
	erased := unbacked(out, "list row")
	left := map[string]staleRecords{}
	for id, s := range stale {
		if erased[id] != (s.listToken > from.token) {
			t.Errorf("resumed after %s: the list row of %s (token %d) erased %v", from.at, id, s.listToken, erased[id])
		}
		if !erased[id] {
			left[id] = s
		}
	}
	if len(unbacked(out, "reverse lookup")) != 0 {
		t.Errorf("the run resumed in the list phase read the lookups:\n%s", out)
	}

	// Stopped in the lookups phase: resumed there, it erases the lookups
	// after the position (and their rows); the list phase, whole, finds
	// the rows of the others.
	var lookupTokens []int64
	for _, s := range left {
		lookupTokens = append(lookupTokens, s.lookupToken)
	}
	from = splitting(t, lookupLines, lookupTokens)
	out, err = runAdmin(t, m, "repair-suspensions", "--from", from.at)
	if err != nil {
		t.Fatal(err)
	}
	resumedOnlyIn(t, out, "lookups", from, unrecorded)
	byTenths(t, out, "list")
	lookups, rows := unbacked(out, "reverse lookup"), unbacked(out, "list row")
	for id, s := range left {
		if lookups[id] != (s.lookupToken > from.token) || rows[id] == lookups[id] {
			t.Errorf("resumed after %s: of %s (lookup token %d) the lookup was erased %v, the list row %v", from.at, id, s.lookupToken, lookups[id], rows[id])
		}
	}
	if len(lookups)+len(rows) != len(left) {
		t.Errorf("the run resumed in the lookups phase erased %d lookups and %d rows, want %d in all:\n%s", len(lookups), len(rows), len(left), out)
	}

	// Only the accounts' phase's work is left, for a full run: the
	// unrecorded suspensions. The stopped lifts' history entries were
	// written by the phases that erased their records, before they did:
	// the expiry entry they erased was the only thing that led a sweeper
	// back to them (TestARepairErasingAStoppedLiftsRecordsWritesItsHistory).
	dry, err = runAdmin(t, m, "repair-suspensions", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	lookups, rows = unbacked(dry, "reverse lookup"), unbacked(dry, "list row")
	for id := range stale {
		if lookups[id] || rows[id] {
			t.Errorf("a record of %s is left:\n%s", id, dry)
		}
		if strings.Contains(dry, "user "+id+": the history of its last lift") {
			t.Errorf("the history of the stopped lift of %s is still missing after the phases that erased its records:\n%s", id, dry)
		}
	}
	if got := unfinished(dry); len(got) != len(unrecorded) {
		t.Fatalf("after the resumed runs, %d accounts without their records, want %d:\n%s", len(got), len(unrecorded), dry)
	}
	if _, err := runAdmin(t, m, "repair-suspensions"); err != nil {
		t.Fatal(err)
	}
	if out, err := runAdmin(t, m, "repair-suspensions", "--dry-run"); err != nil || !strings.Contains(out, "all records agree") {
		t.Fatalf("after a full run: %v\n%s", err, out)
	}
	agreement(t, m.db)
}

// resumedOnlyIn checks a run resumed from a position in phase read none of
// the phases before it (no account without its records was reported) and
// went on after the position.
func resumedOnlyIn(t *testing.T, out, phase string, from progressLine, unrecorded map[string]bool) {
	t.Helper()
	for _, before := range []string{"accounts", "lookups", "list"} {
		if before == phase {
			break
		}
		if lines := progressOf(t, out, before); len(lines) != 0 {
			t.Errorf("resumed from %s, the run read the %s phase again: %v", from.at, before, lines)
		}
	}
	for id := range unrecorded {
		if strings.Contains(out, id) {
			t.Errorf("resumed from %s, the run reported the account %s, which only the accounts phase meets:\n%s", from.at, id, out)
		}
	}
	lines := progressOf(t, out, phase)
	if len(lines) == 0 || lines[0].percent < from.percent || lines[len(lines)-1].percent != 100 {
		t.Errorf("resumed from %s (%d%%), the %s phase reported %v", from.at, from.percent, phase, lines)
	}
}

// TestRepairKeepsSuspensionsMadeWhileItRuns: accounts suspended while the
// repair runs keep every record, and the repair reports nothing of them:
// two suspended in the accounts phase once the range holding the account
// was read (the scan never meets them suspended), two at the lookups
// phase's first report and two at the list phase's (the scans meet their
// new records, or pass them by).
func TestRepairKeepsSuspensionsMadeWhileItRuns(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	ctx := context.Background()
	type member struct {
		id    string
		token int64
		phase string // suspended during this phase
		done  bool
	}
	var members []*member
	for _, phase := range []string{"accounts", "lookups", "list"} {
		for range 2 {
			u, _ := m.member(t)
			var tok int64
			if err := m.db.Session.Query(`SELECT token(id) FROM users WHERE id = ?`, nil).Bind(u.ID).Scan(&tok); err != nil {
				t.Fatal(err)
			}
			members = append(members, &member{id: u.ID, token: tok, phase: phase})
		}
	}
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	opts := moderation.RepairOptions{Progress: func(at moderation.Position, _ float64) {
		reached, _ := strconv.ParseInt(at.At, 10, 64)
		for _, mb := range members {
			// In the accounts phase once its range is read; in the others
			// at their first report.
			if mb.done || mb.phase != at.Phase || (at.Phase == moderation.PhaseAccounts && reached < mb.token) {
				continue
			}
			mb.done = true
			r := m.admin.Send(http.MethodPost, "/v1/users/"+mb.id+"/suspension", map[string]any{"reason": "meanwhile", "until": until.Format(time.RFC3339Nano)})
			if r.StatusCode != http.StatusCreated {
				t.Errorf("suspend during the %s phase: %d %s", at.Phase, r.StatusCode, r.Body)
			}
		}
	}}
	report, err := m.app.Moderation.Repair(ctx, repository.NewAudit(m.app.DB), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, mb := range members {
		if !mb.done {
			t.Fatalf("%s was not suspended during the %s phase", mb.id, mb.phase)
		}
		for _, p := range report.Problems {
			if strings.Contains(p, mb.id) {
				t.Errorf("the repair reported the suspension of %s, made during the %s phase: %s", mb.id, mb.phase, p)
			}
		}
		var n int
		if err := m.db.Session.Query(`SELECT COUNT(*) FROM suspension_expiries WHERE shard = 0 AND until = ? AND user_id = ?`, nil).Bind(until, mb.id).Scan(&n); err != nil || n != 1 {
			t.Errorf("the expiry entry of %s: %d, %v", mb.id, n, err)
		}
	}
	if report.Fixed != 0 {
		t.Errorf("the repair fixed %d things, want none: %v", report.Fixed, report.Problems)
	}
	if agreement(t, m.db) != len(members) {
		t.Errorf("want %d suspended", len(members))
	}
}
