package schema

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestFilesSplitCleanly guards the way gocqlx's migrate reads a file: it
// splits statements at every ';', comments included, so a ';' inside a
// comment would cut a statement in two, but for a line `-- CALL name;`,
// which is gocqlx's call of a step in Go when it is the whole statement
// (right after the ';' before it). Names must be NNN_name.cql.
// callRE is a line gocqlx's migrate runs as a call of a step in Go.
var callRE = regexp.MustCompile(`^-- *CALL +\S+;$`)

// lastLine is stmt's last line, trimmed.
func lastLine(stmt string) string {
	lines := strings.Split(strings.TrimSpace(stmt), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func TestFilesSplitCleanly(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(FS, "*.cql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	nameRE := regexp.MustCompile(`^\d{3}_[a-z0-9_]+\.cql$`)
	for i, name := range names {
		if !nameRE.MatchString(name) {
			t.Errorf("%s: name is not NNN_name.cql", name)
		}
		if want := fmt.Sprintf("%03d_", i+1); !strings.HasPrefix(name, want) {
			t.Errorf("%s: expected number %s (no gaps, no duplicates)", name, want)
		}
		b, _ := fs.ReadFile(FS, name)
		for n, line := range strings.Split(string(b), "\n") {
			if callRE.MatchString(line) {
				continue // a step in Go (repository.migrationCalls), a statement of its own
			}
			if _, comment, ok := strings.Cut(line, "--"); ok && strings.Contains(comment, ";") {
				t.Errorf("%s:%d: a ';' in a comment splits the statement", name, n+1)
			}
		}
		for _, stmt := range strings.Split(string(b), ";") {
			if strings.Contains(stmt, "CALL") && !callRE.MatchString(strings.TrimSpace(stmt)+";") && callRE.MatchString(lastLine(stmt)+";") {
				t.Errorf("%s: a CALL line after a comment is no call (it must follow the statement before it): %.60s", name, strings.TrimSpace(stmt))
			}
			code := stripComments(stmt)
			if code == "" {
				continue
			}
			// Setting a table's options again sets the same: idempotent
			// without the clause, which ALTER TABLE ... WITH has not.
			if !strings.Contains(strings.ToUpper(code), "IF NOT EXISTS") && !tableOptionsRE.MatchString(code) {
				t.Errorf("%s: statement is not idempotent (no IF NOT EXISTS): %.60s", name, code)
			}
		}
	}
}

// tableOptionsRE matches a statement that only sets a table's options.
var tableOptionsRE = regexp.MustCompile(`(?is)^\s*ALTER TABLE [a-z0-9_]+ WITH `)

func stripComments(stmt string) string {
	var out []string
	for _, line := range strings.Split(stmt, "\n") {
		code, _, _ := strings.Cut(line, "--")
		if strings.TrimSpace(code) != "" {
			out = append(out, code)
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
