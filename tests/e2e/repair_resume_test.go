package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fromRE finds the resume positions `repair-suspensions` prints.
var fromRE = regexp.MustCompile(`accounts read: +(\d+)% \(to resume after here: --from (-?\d+)\)`)

// TestRepairResumesFromAPrintedPosition: the repair reads the accounts in
// token ranges and prints, every tenth, where it stands. Twelve
// suspensions stop after the account's compare-and-set (no records). A run resumed from the middle
// position fixes exactly the accounts after it; a full run fixes the
// rest; both can run with requests going on (a suspension made between
// them is left alone).
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
	broken := func(out string) map[string]bool {
		ids := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[0] == "user" && strings.Contains(line, "reverse lookup current=false") {
				ids[f[1]] = true
			}
		}
		return ids
	}

	dry, err := runAdmin(t, m, "repair-suspensions", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	if got := broken(dry); len(got) != 12 {
		t.Fatalf("the dry run found %d accounts without their lookup, want 12:\n%s", len(got), dry)
	}
	positions := fromRE.FindAllStringSubmatch(dry, -1)
	if len(positions) != 11 || positions[0][1] != "0" || positions[10][1] != "100" {
		t.Fatalf("progress lines %v, want 0%% to 100%% by tenths", positions)
	}
	middle, _ := strconv.ParseInt(positions[5][2], 10, 64)

	// Traffic goes on: another suspension, whole, between the runs.
	other, _ := m.member(t)
	if r := m.suspend(other.ID, "spam"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d", r.StatusCode)
	}

	out, err := runAdmin(t, m, "repair-suspensions", "--from", fmt.Sprint(middle))
	if err != nil {
		t.Fatal(err)
	}
	fixed := broken(out)
	for id, tok := range tokens {
		if fixed[id] != (tok > middle) {
			t.Errorf("account %s (token %d, resumed after %d): fixed %v", id, tok, middle, fixed[id])
		}
	}
	dry, err = runAdmin(t, m, "repair-suspensions", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	left := broken(dry)
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
