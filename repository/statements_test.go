package repository

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// lwtTables are the tables whose rows are managed by lightweight
// transactions: every write to them must carry a condition (U6). The claim
// tables (usernames, emails, group_names) are written through the template
// "%s" in claims.go. groups is LWT-managed like users; its member tables
// (group_members, groups_by_member) are not: they are derived from it and
// written USING TIMESTAMP <group version>. account_tokens (mailed tokens
// and challenges), account_factors and jobs are LWT-managed too: every
// write of them is a condition.
var lwtTables = map[string]bool{"usernames": true, "emails": true, "users": true, "groups": true, "%s": true, "content": true,
	"account_tokens": true, "account_factors": true, "jobs": true}

var writeRE = regexp.MustCompile(`(?is)^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_%]+)`)

// TestWritesToLWTTablesAreConditional lists every CQL statement of the
// package's source (string constants, with their concatenations worked out,
// and string literals anywhere else) and fails on any INSERT, UPDATE or
// DELETE of a table of lwtTables without an IF: a plain write there could
// overwrite or delete a claim its writer does not own, or lose a change.
func TestWritesToLWTTablesAreConditional(t *testing.T) {
	t.Parallel()
	statements := packageStrings(t)
	checked := 0
	for pos, s := range statements {
		m := writeRE.FindStringSubmatch(s)
		if m == nil || !lwtTables[strings.ToLower(m[2])] {
			continue
		}
		checked++
		if !regexp.MustCompile(`(?i)\sIF\s`).MatchString(s) {
			t.Errorf("%s: unconditional write to %s: %s", pos, m[2], s)
		}
	}
	// users and groups: insert, activate, update, discard each. Claims:
	// insert, commit, release, takeover. Fewer means the scan missed some.
	if checked < 14 {
		t.Fatalf("found only %d writes to LWT tables; the scan is broken", checked)
	}
}

// versionedTables are the casTables whose rows carry a version beside
// their write id: casTable.write settles a lost answer by the tag at the
// version the write took.
var versionedTables = map[string]bool{"users": true, "groups": true, "content": true, "jobs": true}

// TestTagsStayWithTheirVersion fails on a write to a versioned table that
// sets write_id without setting version: it would replace the tag of the
// write that took the version, whose lost answer, read back, would then be
// settled as "another write took our version" though it applied (a
// clear of a pending change did that to the share that recorded it).
func TestTagsStayWithTheirVersion(t *testing.T) {
	t.Parallel()
	checked := 0
	for pos, s := range packageStrings(t) {
		m := writeRE.FindStringSubmatch(s)
		if m == nil || !versionedTables[strings.ToLower(m[2])] || !strings.Contains(s, "write_id") {
			continue
		}
		checked++
		if !regexp.MustCompile(`(?i)[\s(,]version\s*[=,)]`).MatchString(strings.SplitN(strings.ToUpper(s), " WHERE ", 2)[0]) {
			t.Errorf("%s: writes %s's write_id without its version: %s", pos, m[2], s)
		}
	}
	if checked < 6 { // insert and update of users, groups, content, jobs at least
		t.Fatalf("found only %d writes of a versioned table's write_id; the scan is broken", checked)
	}
}

// packageStrings returns the package's string constants (evaluated) and
// every other string literal, by source position.
func packageStrings(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range packageSource(t).strings {
		out[s.pos] = s.text
	}
	return out
}

// sourceString is a string constant of the package (evaluated) or another
// string literal, with the kind it was given: the type a constant is
// declared with, or the conversion a literal sits in ("" for none).
type sourceString struct {
	pos, text, kind string
}

// source is what the package's files say: its strings, and the calls of
// the driver's statement constructors outside statements.go.
type source struct {
	strings      []sourceString
	constructors []string
}

// constructorNames are the driver's ways of making a statement (gocql's
// Session.Query and NewBatch, gocqlx's ContextQuery and Bind). Made
// anywhere but statements.go, a statement would not be marked with what
// its kind allows.
var constructorNames = map[string]bool{"Query": true, "ContextQuery": true, "NewBatch": true, "Bind": true}

// packageSource parses the package's non-test files.
func packageSource(t *testing.T) source {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]ast.Expr{}
	constKind := map[string]string{}
	inConst := map[ast.Node]bool{}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, file)
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						consts[n.Name] = vs.Values[i]
						if id, ok := vs.Type.(*ast.Ident); ok {
							constKind[n.Name] = id.Name
						}
						ast.Inspect(vs.Values[i], func(n ast.Node) bool { inConst[n] = true; return true })
					}
				}
			}
		}
	}
	var eval func(e ast.Expr) (string, bool)
	eval = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.Ident:
			if v, ok := consts[e.Name]; ok {
				return eval(v)
			}
		case *ast.ParenExpr:
			return eval(e.X)
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				x, ok1 := eval(e.X)
				y, ok2 := eval(e.Y)
				return x + y, ok1 && ok2
			}
		}
		return "", false
	}
	var out source
	for name, v := range consts {
		if s, ok := eval(v); ok {
			out.strings = append(out.strings, sourceString{fset.Position(v.Pos()).String() + " (" + name + ")", s, constKind[name]})
		}
	}
	for _, file := range parsed {
		var stack []ast.Node
		ast.Inspect(file, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			stack = append(stack, n)
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, ok := eval(n); ok && !inConst[n] {
					out.strings = append(out.strings, sourceString{fset.Position(n.Pos()).String(), s, conversionAround(stack)})
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if pos := fset.Position(n.Pos()); ok && constructorNames[sel.Sel.Name] && filepath.Base(pos.Filename) != "statements.go" {
					out.constructors = append(out.constructors, pos.String()+": "+sel.Sel.Name)
				}
			}
			return true
		})
	}
	return out
}

// conversionAround is the kind type of the innermost conversion to a kind
// among a literal's enclosing nodes, or "".
func conversionAround(stack []ast.Node) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if call, ok := stack[i].(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && kindRules[id.Name] != nil {
				return id.Name
			}
		}
	}
	return ""
}

func TestTheScanCatchesAnUnconditionalWrite(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"UPDATE usernames SET user_id = ? WHERE key = ?",
		"DELETE FROM %s WHERE key = ?",
		"insert into users (id) values (?)",
	} {
		m := writeRE.FindStringSubmatch(s)
		if m == nil || !lwtTables[strings.ToLower(m[2])] || regexp.MustCompile(`(?i)\sIF\s`).MatchString(s) {
			t.Errorf("%q would not be caught", s)
		}
	}
}

// attemptIndexes are the indexes of operations in progress (account
// deletions, group closings, moderation, membership changes, the job
// queue; docs/design/jobs.md#index-start), each table with the column
// that names its attempt: every write of them is USING TIMESTAMP <the
// attempt's start> (the end one microsecond later), so a repeat is
// harmless and a late write never outlives its end; an end names the
// attempt, so one attempt's end never deletes another's entry
// (docs/design/deletion.md, "every attempt's record is its own"); and an
// end in a table of migration 032 names the start too (its clustering
// begins with it). The tables before 014 are neither read nor written.
var attemptIndexes = map[string]string{
	"account_deletion_attempts": "attempt", "group_closing_attempts": "attempt", "moderation_attempts": "attempt",
	"group_change_attempts": "attempt", "job_queue": "job_id",
	"account_deletion_attempts_by_start": "attempt", "group_closing_attempts_by_start": "attempt",
	"moderation_attempts_by_start": "attempt", "group_change_attempts_by_start": "attempt", "job_queue_by_start": "job_id",
}

// TestWritesToAttemptIndexesAreTheirOwn checks every write of an attempt
// index is timestamped, and every delete names the attempt (and in the
// tables of migration 032 its start).
func TestWritesToAttemptIndexesAreTheirOwn(t *testing.T) {
	t.Parallel()
	checked := 0
	for pos, s := range packageStrings(t) {
		m := writeRE.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		table := strings.ToLower(m[2])
		attempt, ok := attemptIndexes[table]
		if !ok {
			continue
		}
		checked++
		if !regexp.MustCompile(`(?i)\sUSING\s+TIMESTAMP\s`).MatchString(s) {
			t.Errorf("%s: a write of %s without USING TIMESTAMP: %s", pos, m[2], s)
		}
		if !strings.HasPrefix(strings.ToUpper(m[1]), "DELETE") {
			continue
		}
		if !regexp.MustCompile(`(?i)\s` + attempt + `\s*=\s*\?`).MatchString(s) {
			t.Errorf("%s: a delete of %s that does not name the attempt: %s", pos, m[2], s)
		}
		if strings.HasSuffix(table, "_by_start") && !regexp.MustCompile(`(?i)\sstarted_at\s*=\s*\?`).MatchString(s) {
			t.Errorf("%s: a delete of %s that does not name the start: %s", pos, m[2], s)
		}
	}
	// Insert and delete of each new table, the delete of each old one.
	if checked < 15 {
		t.Fatalf("found only %d writes to attempt indexes; the scan is broken", checked)
	}
}

// The shapes of CQL text the kinds are checked against.
var (
	// cqlVerbRE finds statements by their verb in capitals, the package's
	// convention (in lower case, "create" or "create keyspace %s: %w" is an
	// operation's name or an error message).
	cqlVerbRE    = regexp.MustCompile(`(?s)^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|TRUNCATE|BEGIN)\s`)
	dmlRE        = regexp.MustCompile(`(?is)^\s*(INSERT|UPDATE|DELETE)\b`)
	conditionRE  = regexp.MustCompile(`(?i)\sIF\s`)
	timestampRE  = regexp.MustCompile(`(?i)\sUSING\s+(TTL\s+\S+\s+AND\s+)?TIMESTAMP\s`)
	tokenRangeRE = regexp.MustCompile(`(?i)\btoken\s*\(`)
	countRE      = regexp.MustCompile(`(?i)^\s*SELECT\s+COUNT\(\*\)`)
	whereRE      = regexp.MustCompile(`(?i)\sWHERE\s`)
	nodeValueRE  = regexp.MustCompile(`(?i)\b(now|uuid|currentTimestamp|currentDate|currentTime|currentTimeUUID)\s*\(`)
	arithmeticRE = regexp.MustCompile(`(?i)\b(\w+)\s*=\s*(\w+)\s*[-+]|=\s*\?\s*\+`)
	schemaVerbRE = regexp.MustCompile(`(?is)^\s*(CREATE|DROP|ALTER|TRUNCATE)\b`)
	selectVerbRE = regexp.MustCompile(`(?is)^\s*SELECT\b`)
)

// kindRules say, for each kind, what its text must look like: "" when it
// fits, else why not. A conditional statement of any other kind (marked
// idempotent, so sent again or copied) fails here.
var kindRules = map[string]func(s string) string{
	"readCQL": func(s string) string {
		switch {
		case !selectVerbRE.MatchString(s):
			return "a read that is not a SELECT"
		case tokenRangeRE.MatchString(s) || !whereRE.MatchString(s):
			return "a read over token ranges or a whole table is a scanCQL"
		}
		return ""
	},
	"scanCQL": func(s string) string {
		if !selectVerbRE.MatchString(s) || !(tokenRangeRE.MatchString(s) || !whereRE.MatchString(s) || countRE.MatchString(s)) {
			return "a scan that does not read token ranges, a whole table or a count"
		}
		return ""
	},
	"versionedCQL": func(s string) string {
		if p := plainWriteProblem(s); p != "" {
			return p
		}
		if !timestampRE.MatchString(s) {
			return "a versioned write without USING TIMESTAMP"
		}
		return ""
	},
	"repeatableCQL": plainWriteProblem,
	"onceCQL": func(s string) string {
		if !dmlRE.MatchString(s) || conditionRE.MatchString(s) {
			return "a once-only write that is not a plain INSERT, UPDATE or DELETE"
		}
		return ""
	},
	"conditionalCQL": func(s string) string {
		if !dmlRE.MatchString(s) || !conditionRE.MatchString(s) {
			return "a conditional statement without IF"
		}
		return ""
	},
	"schemaCQL": func(s string) string {
		if !schemaVerbRE.MatchString(s) {
			return "a schema statement that is not CREATE, DROP, ALTER or TRUNCATE"
		}
		return ""
	},
}

// plainWriteProblem says why s is not a write that may run twice: a
// condition (a compare-and-set), a value the node computes, or arithmetic
// on a column (a counter, a list append).
func plainWriteProblem(s string) string {
	switch {
	case !dmlRE.MatchString(s):
		return "an idempotent write that is not an INSERT, UPDATE or DELETE"
	case conditionRE.MatchString(s):
		return "a conditional statement marked idempotent: it would be sent again or copied"
	case nodeValueRE.MatchString(s):
		return "a write of a value the node computes (now(), uuid()): a repeat writes another"
	case arithmeticRE.MatchString(s):
		return "a write of arithmetic on a column (a counter, a list append): a repeat applies it twice"
	}
	return ""
}

// TestEveryStatementHasAKind: every CQL statement of the package is
// declared (a constant's type) or converted as one of the kinds of
// statements.go, its text fits its kind (so no conditional statement is
// marked idempotent, and every idempotent write is a plain one), and only
// statements.go makes driver statements, where each is marked with what
// its kind allows.
func TestEveryStatementHasAKind(t *testing.T) {
	t.Parallel()
	src := packageSource(t)
	checked := 0
	for _, s := range src.strings {
		if !cqlVerbRE.MatchString(s.text) {
			continue
		}
		checked++
		rule := kindRules[s.kind]
		if rule == nil {
			t.Errorf("%s: a statement without a kind (declare it as one of statements.go's): %s", s.pos, s.text)
			continue
		}
		if problem := rule(s.text); problem != "" {
			t.Errorf("%s: %s %s: %s", s.pos, s.kind, problem, s.text)
		}
	}
	for _, c := range src.constructors {
		t.Errorf("%s: a statement made outside statements.go, unmarked", c)
	}
	// About a hundred statements today; far fewer means the scan is broken.
	if checked < 90 {
		t.Fatalf("found only %d statements; the scan is broken", checked)
	}
}

// TestTheKindRulesCatchMisfits: a test of the test, one misfit per rule.
func TestTheKindRulesCatchMisfits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ kind, stmt string }{
		{"versionedCQL", "UPDATE users SET name = ? WHERE id = ? IF version = ?"},
		{"versionedCQL", "INSERT INTO sessions (token_hash) VALUES (?)"},
		{"repeatableCQL", "INSERT INTO usernames (key) VALUES (?) IF NOT EXISTS"},
		{"repeatableCQL", "UPDATE stats SET views = views + ? WHERE id = ?"},
		{"repeatableCQL", "UPDATE groups SET log = ? + log WHERE id = ?"},
		{"repeatableCQL", "INSERT INTO marks (id, at) VALUES (?, now())"},
		{"readCQL", "SELECT id FROM users WHERE token(id) > ? AND token(id) <= ?"},
		{"readCQL", "SELECT DISTINCT bucket FROM users_by_status"},
		{"readCQL", "DELETE FROM users WHERE id = ?"},
		{"scanCQL", "SELECT id FROM users WHERE id = ?"},
		{"conditionalCQL", "UPDATE users SET name = ? WHERE id = ?"},
		{"onceCQL", "DELETE FROM users WHERE id = ? IF EXISTS"},
		{"schemaCQL", "SELECT * FROM system.peers"},
	} {
		if kindRules[tc.kind](tc.stmt) == "" {
			t.Errorf("%s %q would pass", tc.kind, tc.stmt)
		}
	}
}
