package shelf

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// bucketNames are the library's bucket constants (domain/library).
var bucketNames = map[string]bool{"BucketPrivate": true, "BucketLoggedIn": true, "BucketPublic": true}

// TestOneBucketList fails when a Go file (tests aside) outside
// domain/library/content.go spells the whole bucket list itself instead of calling library.Buckets:
// such a copy misses the next level, and a store that walks it would never
// write that level's rows.
func TestOneBucketList(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var copies []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "sdk") {
			return filepath.SkipDir
		}
		// A test's expected value may spell the buckets: it checks the
		// list, it does not walk it.
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.CompositeLit); ok && spellsEveryBucket(lit) {
				copies = append(copies, fset.Position(lit.Pos()).String())
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	own, found := filepath.Join("domain", "library", "content.go")+":", false
	for _, c := range copies {
		if strings.HasPrefix(c, own) {
			found = true
			continue
		}
		t.Errorf("%s: a copy of the bucket list; call library.Buckets()", c)
	}
	if !found {
		t.Fatalf("the scan did not find library.Buckets' own list in %s; it is broken", own)
	}
}

// spellsEveryBucket reports whether a composite literal names every bucket
// constant.
func spellsEveryBucket(lit *ast.CompositeLit) bool {
	seen := map[string]bool{}
	for _, e := range lit.Elts {
		switch e := e.(type) {
		case *ast.Ident:
			seen[e.Name] = bucketNames[e.Name]
		case *ast.SelectorExpr:
			seen[e.Sel.Name] = bucketNames[e.Sel.Name]
		}
	}
	for name := range bucketNames {
		if !seen[name] {
			return false
		}
	}
	return true
}
