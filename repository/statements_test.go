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
// written USING TIMESTAMP <group version>. account_tokens (mailed tokens)
// are LWT-managed too: created, used and finished by conditions.
var lwtTables = map[string]bool{"usernames": true, "emails": true, "users": true, "groups": true, "%s": true, "content": true,
	"account_tokens": true}

var writeRE = regexp.MustCompile(`(?is)^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_%]+)`)

// TestWritesToLWTTablesAreConditional lists every CQL statement of the
// package's source (string constants, with their concatenations worked out,
// and string literals anywhere else) and fails on any INSERT, UPDATE or
// DELETE of a claim or account row without an IF: a plain write there could
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

// packageStrings returns the package's string constants (evaluated) and
// every other string literal, by source position.
func packageStrings(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]ast.Expr{}
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
	out := map[string]string{}
	for name, v := range consts {
		if s, ok := eval(v); ok {
			out[fset.Position(v.Pos()).String()+" ("+name+")"] = s
		}
	}
	for _, file := range parsed {
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && !inConst[n] {
				if s, ok := eval(lit); ok {
					out[fset.Position(lit.Pos()).String()] = s
				}
			}
			return true
		})
	}
	return out
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
// deletions, group closings; docs/design.md#deletion): every write of them
// is USING TIMESTAMP <the attempt's start> (the end one microsecond later),
// so a repeat is harmless and a late write never outlives its end; and in
// the tables of migration 014 an end names the attempt, so one attempt's
// end never deletes another's entry (issue 24). The tables before 014 are
// only read and carried over.
var attemptIndexes = map[string]bool{"account_deletion_attempts": true, "group_closing_attempts": true,
	"account_deletions": false, "group_closings": false}

// TestWritesToAttemptIndexesAreTheirOwn checks every write of an attempt
// index is timestamped, and every delete of a 014 table names the attempt.
func TestWritesToAttemptIndexesAreTheirOwn(t *testing.T) {
	t.Parallel()
	checked := 0
	for pos, s := range packageStrings(t) {
		m := writeRE.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		byAttempt, ok := attemptIndexes[strings.ToLower(m[2])]
		if !ok {
			continue
		}
		checked++
		if !regexp.MustCompile(`(?i)\sUSING\s+TIMESTAMP\s`).MatchString(s) {
			t.Errorf("%s: a write of %s without USING TIMESTAMP: %s", pos, m[2], s)
		}
		if byAttempt && strings.HasPrefix(strings.ToUpper(m[1]), "DELETE") && !regexp.MustCompile(`(?i)\sattempt\s*=\s*\?`).MatchString(s) {
			t.Errorf("%s: a delete of %s that does not name the attempt: %s", pos, m[2], s)
		}
	}
	// Insert and delete of each 014 table, the delete of each old one.
	if checked < 6 {
		t.Fatalf("found only %d writes to attempt indexes; the scan is broken", checked)
	}
}
