package shelf

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// testMachinery are the packages of tests and of the deliberately broken
// builds: the fault injector, and the broken stores the API links in only
// when built with the tag brokenclaims or brokenlwt.
var testMachinery = []string{"shelf/tests/faultinject", "shelf/internal/broken"}

// TestTestMachineryStaysOutOfProduction: the API built without tags (the
// production binary) links in no test machinery: fault injection and the
// broken builds decorate the repository and the stores from outside.
func TestTestMachineryStaysOutOfProduction(t *testing.T) {
	t.Parallel()
	deps := shelfDeps(t, build.Default, "shelf/cmd/api")
	for _, p := range testMachinery {
		if deps[p] {
			t.Errorf("cmd/api, built without tags, imports %s", p)
		}
	}
	if !deps["shelf/repository"] || !deps["shelf/internal/app"] {
		t.Fatalf("the walk missed the API's own packages: %v", deps)
	}
}

// TestTestMachineryWalkSeesTheBrokenBuild: built with a broken build's tag,
// the API does link internal/broken, so the walk above would have seen it.
func TestTestMachineryWalkSeesTheBrokenBuild(t *testing.T) {
	t.Parallel()
	for _, tag := range []string{"brokenclaims", "brokenlwt"} {
		ctx := build.Default
		ctx.BuildTags = []string{tag}
		if !shelfDeps(t, ctx, "shelf/cmd/api")["shelf/internal/broken"] {
			t.Errorf("cmd/api built with -tags %s: internal/broken not among its imports", tag)
		}
	}
}

// shelfDeps are the packages of this module that pkg imports, directly or
// not, without its tests, under ctx's build tags.
func shelfDeps(t *testing.T, ctx build.Context, pkg string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	var visit func(string)
	visit = func(imp string) {
		if seen[imp] {
			return
		}
		seen[imp] = true
		dir := filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(imp, "shelf"), "/"))
		if dir == "" {
			dir = "."
		}
		p, err := ctx.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", imp, err)
		}
		for _, i := range p.Imports {
			if i == "shelf" || strings.HasPrefix(i, "shelf/") {
				visit(i)
			}
		}
	}
	visit(pkg)
	return seen
}
