package shelf

import (
	"go/build"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDependencyRule enforces the layering: dependencies point inward,
// handlers -> domain <- repository, and internal/app wires them.
//   - domain and its packages import the standard library only (no chi,
//     gocql, validator, zerolog, net/http), plus golang.org/x/text, the Go
//     project's own Unicode tables, and golang.org/x/net/idna, its IDNA
//     (NFKC, case folding and a domain's one spelling are business rules
//     here: U1);
//   - the kernel (domain) imports none of the service packages under it,
//     and a service package (domain/accounts, domain/moderation,
//     domain/groups, domain/library) imports the kernel only, never another
//     service: what one needs of another is a small interface it declares
//     itself, satisfied in internal/app;
//   - the workflow floor (domain/lifecycle: deleting accounts, closing
//     groups) may import the kernel and the services, and nothing else in
//     domain imports it: a workflow that spans services lives there, so no
//     service needs another after it was built;
//   - handlers and repository never import each other;
//   - nothing imports a command;
//   - nothing that ships imports the proof wing (tests/): a package outside
//     it may import one from its tests only (importsProof), and the api
//     as built links none (TestShippedCodeLinksNoProof).
func TestDependencyRule(t *testing.T) {
	t.Parallel()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		checked++
		imports := append(append(pkg.Imports, pkg.TestImports...), pkg.XTestImports...)
		for _, imp := range imports {
			if msg := violates(filepath.ToSlash(path), imp); msg != "" {
				t.Errorf("%s imports %s: %s", path, imp, msg)
			}
		}
		for _, imp := range pkg.Imports {
			if msg := importsProof(filepath.ToSlash(path), imp); msg != "" {
				t.Errorf("%s imports %s: %s", path, imp, msg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 5 {
		t.Fatalf("checked only %d packages; is the walk broken?", checked)
	}
}

// lifecycle is the workflow floor above the services.
const lifecycle = "shelf/domain/lifecycle"

func violates(dir, imp string) string {
	isStdlib := !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") && !strings.HasPrefix(imp, "shelf")
	switch {
	case dir == "domain" || strings.HasPrefix(dir, "domain/"):
		if !isStdlib && imp != "shelf/domain" && !strings.HasPrefix(imp, "shelf/domain/") && !strings.HasPrefix(imp, "golang.org/x/text/") && imp != "golang.org/x/net/idna" {
			return "domain may import only the standard library (and golang.org/x/text, golang.org/x/net/idna)"
		}
		if imp == "net/http" {
			return "domain knows nothing of HTTP"
		}
		if imp == lifecycle && dir != "domain/lifecycle" {
			return "nothing in domain imports the workflow floor (domain/lifecycle)"
		}
		if dir == "domain" && strings.HasPrefix(imp, "shelf/domain/") {
			return "the kernel imports no service package"
		}
		if dir != "domain" && dir != "domain/lifecycle" && strings.HasPrefix(imp, "shelf/domain/") && imp != "shelf/"+dir {
			return "a service package imports the kernel only, never another service"
		}
	case dir == "handlers" && strings.HasPrefix(imp, "shelf/repository"):
		return "handlers must not import repository (cmd/api wires them)"
	case dir == "repository" && strings.HasPrefix(imp, "shelf/handlers"):
		return "repository must not import handlers"
	}
	if strings.HasPrefix(imp, "shelf/cmd/") {
		return "commands are not libraries"
	}
	return ""
}

// proofWing is where everything that proves and nothing that ships lives:
// the harness, the fakes, the contract suites, fault injection, the
// deliberately broken builds, the checker, the benchmarks (tests/README.md).
const proofWing = "shelf/tests"

// importsProof says why a package's own files (its tests aside) may not
// import imp: only the proof wing imports the proof wing.
func importsProof(dir, imp string) string {
	if dir == "tests" || strings.HasPrefix(dir, "tests/") {
		return ""
	}
	if imp == proofWing || strings.HasPrefix(imp, proofWing+"/") {
		return "code that ships imports nothing of the proof wing (tests/); its tests may"
	}
	return ""
}

// TestShippedCodeLinksNoProof: the api as it is built (go list -deps
// ./cmd/api, no tags) links no package of the proof wing, of the
// development tools (tools/) or of the standard library's for tests.
func TestShippedCodeLinksNoProof(t *testing.T) {
	t.Parallel()
	deps := listDeps(t, "./cmd/api")
	if !slices.Contains(deps, "shelf/repository") || !slices.Contains(deps, "shelf/internal/app") {
		t.Fatalf("go list missed the api's own packages: %v", deps)
	}
	for _, d := range deps {
		if msg := linksProof(d); msg != "" {
			t.Errorf("cmd/api links %s: %s", d, msg)
		}
	}
}

// linksProof says why a binary that ships may not link the package pkg.
func linksProof(pkg string) string {
	switch {
	case pkg == proofWing || strings.HasPrefix(pkg, proofWing+"/"):
		return "the proof wing (tests/) does not ship"
	case strings.HasPrefix(pkg, "shelf/tools/"):
		return "the development tools (tools/) do not ship"
	case pkg == "testing" || strings.HasPrefix(pkg, "testing/") || pkg == "net/http/httptest":
		return "a package for tests does not ship"
	}
	return ""
}

// listDeps is `go list -deps pkg`: every package the build of pkg links.
func listDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestShippedCodeRuleCatchesProof: the rule flags a package that ships
// importing the proof wing, and the link check flags a deliberately broken
// build (tests/broken/claims), which wraps the api in the proof wing's
// stores, so the check above would have seen such a link.
func TestShippedCodeRuleCatchesProof(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ dir, imp string }{
		{"internal/app", "shelf/tests/broken"},
		{"repository", "shelf/tests/faultinject"},
		{"cmd/api", "shelf/tests/testkit"},
		{"handlers", "shelf/tests/memstore"},
		{"tools/localcassandra", "shelf/tests/testkit"},
	} {
		if importsProof(tc.dir, tc.imp) == "" {
			t.Errorf("%s importing %s was not caught", tc.dir, tc.imp)
		}
	}
	for _, tc := range []struct{ dir, imp string }{
		{"tests/broken/claims", "shelf/tests/broken"},
		{"tests/e2e", "shelf/tests/testkit"},
		{"tests/testkit", "shelf/tools/localcassandra"},
		{"internal/app", "shelf/repository"},
		{"internal/app", "shelf/testsuite"},
	} {
		if msg := importsProof(tc.dir, tc.imp); msg != "" {
			t.Errorf("%s importing %s flagged: %s", tc.dir, tc.imp, msg)
		}
	}
	for _, pkg := range []string{"testing", "net/http/httptest", "shelf/tools/localcassandra", "shelf/tests/memstore"} {
		if linksProof(pkg) == "" {
			t.Errorf("linking %s was not caught", pkg)
		}
	}
	caught := 0
	for _, d := range listDeps(t, "./tests/broken/claims") {
		if linksProof(d) != "" {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("the link check passed tests/broken/claims, which links the proof wing")
	}
}

func TestDependencyRuleCatchesViolations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ dir, imp string }{
		{"domain", "github.com/gocql/gocql"},
		{"domain", "net/http"},
		{"domain", "shelf/repository"},
		{"domain", "shelf/domain/accounts"},
		{"domain/moderation", "shelf/domain/accounts"},
		{"domain/library", "shelf/domain/groups"},
		{"domain/groups", "github.com/rs/zerolog"},
		{"domain/accounts", "shelf/domain/lifecycle"},
		{"domain/groups", "shelf/domain/lifecycle"},
		{"domain", "shelf/domain/lifecycle"},
		{"domain/lifecycle", "github.com/gocql/gocql"},
		{"domain/lifecycle", "net/http"},
		{"handlers", "shelf/repository"},
		{"repository", "shelf/handlers"},
		{"tests/testkit", "shelf/cmd/api"},
	} {
		if violates(tc.dir, tc.imp) == "" {
			t.Errorf("%s importing %s was not caught", tc.dir, tc.imp)
		}
	}
	for _, tc := range []struct{ dir, imp string }{
		{"domain", "context"},
		{"domain/accounts", "shelf/domain"},
		{"domain/library", "golang.org/x/text/unicode/norm"},
		{"domain", "golang.org/x/net/idna"},
		{"repository", "shelf/domain/library"},
		{"internal/app", "shelf/domain/groups"},
		{"domain/lifecycle", "shelf/domain"},
		{"domain/lifecycle", "shelf/domain/accounts"},
		{"domain/lifecycle", "shelf/domain/groups"},
		{"domain/lifecycle", "shelf/domain/library"},
		{"internal/app", "shelf/domain/lifecycle"},
		{"handlers", "shelf/domain/lifecycle"},
	} {
		if msg := violates(tc.dir, tc.imp); msg != "" {
			t.Errorf("%s importing %s flagged: %s", tc.dir, tc.imp, msg)
		}
	}
	if _, err := os.Stat("domain"); err != nil {
		t.Fatal(err)
	}
}
