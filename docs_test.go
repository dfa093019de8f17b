package shelf

import (
	"bufio"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The documentation is a set of pages that link to each other and that
// code comments point into (docs/design/signup.md#signup ...). These tests
// keep those links true when pages move, keep the README short, and keep
// numbered defects out of the prose: a fixed defect lives in its test's
// name, an open one in docs/gaps.md under a name.

var (
	// mdLink is a Markdown link's target: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// codeDocRef is a page of docs/ named in code or a comment.
	codeDocRef = regexp.MustCompile(`\bdocs/[A-Za-z0-9_./-]*\.md(#[A-Za-z0-9_-]+)?`)
	// explicitAnchor is an anchor a page sets by hand.
	explicitAnchor = regexp.MustCompile(`<a id="([^"]+)"></a>`)
	// numbered is a defect or an issue named by its number, the number
	// on the same line or at the start of the next (after a comment's
	// marker).
	numbered = regexp.MustCompile(`(?i)\b(gaps?|issues?|defects?)(:? |-|:?[ \t]*\n[ \t]*(//|#|--)?[ \t]*)#?[0-9]+`)
)

// repoFiles lists the files of the repository with one of exts, without
// the trees of other tools (node_modules, caches, git; .ci is ours).
func repoFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && p != ".ci" && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		for _, e := range exts {
			if strings.HasSuffix(p, e) {
				out = append(out, filepath.ToSlash(p))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// anchorsOf answers the anchors of a Markdown page: those set by hand and
// those GitHub makes of its headings (lower-cased, punctuation dropped,
// spaces as hyphens, a repeat numbered -1, -2 ...).
func anchorsOf(t *testing.T, page string, cache map[string]map[string]bool) map[string]bool {
	t.Helper()
	if a, ok := cache[page]; ok {
		return a
	}
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		for _, m := range explicitAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := headingSlug(heading)
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			slug = fmt.Sprintf("%s-%d", slug, n+1)
		} else {
			seen[slug] = 0
		}
		anchors[slug] = true
	}
	cache[page] = anchors
	return anchors
}

func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkTarget reports a link to a page or an anchor that does not exist.
func checkTarget(t *testing.T, from, target string, cache map[string]map[string]bool) {
	t.Helper()
	file, anchor, _ := strings.Cut(target, "#")
	page := from
	if file != "" {
		page = path.Clean(file)
		if _, err := os.Stat(page); err != nil {
			t.Errorf("%s links to %s: no such file", from, target)
			return
		}
	}
	if anchor == "" || !strings.HasSuffix(page, ".md") {
		return
	}
	if !anchorsOf(t, page, cache)[anchor] {
		t.Errorf("%s links to %s: %s has no anchor %q", from, target, page, anchor)
	}
}

// TestDocLinksResolve: every relative link of every Markdown page, and
// every docs/*.md (with its anchor) that code names, leads to a page and
// an anchor that exist.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	cache := map[string]map[string]bool{}
	for _, page := range repoFiles(t, ".md") {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(raw), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "<") {
				continue
			}
			if strings.HasPrefix(target, "#") {
				checkTarget(t, page, target, cache)
				continue
			}
			checkTarget(t, page, path.Join(path.Dir(page), target), cache)
		}
	}
	for _, file := range repoFiles(t, ".go", ".js", ".mjs", ".yaml", ".yml", ".sh", "Makefile", ".ci/run") {
		if strings.HasPrefix(file, "schema/") {
			continue // migrations never change once landed; docs/design.md keeps their anchors
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range codeDocRef.FindAllString(string(raw), -1) {
			if strings.HasPrefix(ref, "docs/design.md") && file != "docs_test.go" {
				t.Errorf("%s names %s: point to the section's own page under docs/design/", file, ref)
				continue
			}
			checkTarget(t, file, strings.TrimRight(ref, "."), cache)
		}
	}
}

// TestTheREADMEIsShort: the README is read, not searched: under 300 lines,
// the two commands in its first 20.
func TestTheREADMEIsShort(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	if len(lines) >= 300 {
		t.Errorf("README.md has %d lines; keep it under 300 and move the rest to docs/", len(lines))
	}
	head := strings.Join(lines[:min(20, len(lines))], "\n")
	for _, cmd := range []string{"make run", "make test"} {
		if !strings.Contains(head, cmd) {
			t.Errorf("README.md's first 20 lines do not show %q", cmd)
		}
	}
}

// TestNoNumberedDefects: code and docs name an invariant or a test, never
// "gap 12" or "issue 24": the numbers outlive the ledger they came from.
// Migrations are exempt: they never change once landed.
func TestNoNumberedDefects(t *testing.T) {
	t.Parallel()
	for _, file := range repoFiles(t, ".go", ".md", ".js", ".mjs", ".py", ".ts", ".yaml", ".yml", ".sh", "Makefile", ".ci/run") {
		if strings.HasPrefix(file, "schema/") || strings.HasSuffix(file, "docs_test.go") {
			continue
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range numbered.FindAllIndex(raw, -1) {
			line := 1 + strings.Count(string(raw[:at[0]]), "\n")
			t.Errorf("%s:%d names %q: name the invariant or the test instead", file, line, raw[at[0]:at[1]])
		}
	}
}

// TestEveryScreenshotIsShown: make test-browser README_SCREENSHOTS=1
// writes docs/screenshots, and docs/console.md shows them; a picture the
// page no longer shows is one nobody looks at again (the links' check
// covers the other way round).
func TestEveryScreenshotIsShown(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("docs/console.md")
	if err != nil {
		t.Fatal(err)
	}
	shots, err := filepath.Glob("docs/screenshots/*.png")
	if err != nil || len(shots) == 0 {
		t.Fatalf("no screenshots in docs/screenshots: %v", err)
	}
	for _, shot := range shots {
		if !strings.Contains(string(page), "(screenshots/"+filepath.Base(shot)+")") {
			t.Errorf("docs/console.md does not show %s", shot)
		}
	}
}

// makeTarget is a target make help lists: a name, a colon, and its help
// after "## ".
var makeTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):[^\n]*## `)

// TestEveryTaskIsDocumented: every target make help lists has its row in
// one place: the Makefile's (working on shelf) in docs/development.md's
// table of tasks, those of the proof lanes' file it includes in
// tests/README.md's, never in both; the README's two commands may stand
// in the README alone.
func TestEveryTaskIsDocumented(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	homes := map[string]string{"Makefile": "docs/development.md"}
	for _, m := range regexp.MustCompile(`(?m)^-?include\s+(.+)$`).FindAllStringSubmatch(read("Makefile"), -1) {
		for _, pattern := range strings.Fields(m[1]) {
			found, _ := filepath.Glob(pattern)
			for _, f := range found {
				homes[f] = filepath.ToSlash(filepath.Join(filepath.Dir(f), "README.md"))
			}
		}
	}
	readme := read("README.md")
	n := 0
	for mf, home := range homes {
		for _, m := range makeTarget.FindAllStringSubmatch(read(mf), -1) {
			n++
			named, row := "`make "+m[1], "| `make "+m[1]+"`"
			if !strings.Contains(read(home), named) && !strings.Contains(readme, "make "+m[1]+" ") {
				t.Errorf("make %s (%s) has no row in %s", m[1], mf, home)
			}
			for _, h := range homes {
				if h != home && strings.Contains(read(h), row) {
					t.Errorf("make %s (%s) has a row in %s too: one place each", m[1], mf, h)
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("found %d targets in %v: does the help's format still read as this test does?", n, homes)
	}
}

var (
	// namedTest is a test, benchmark or fuzz target a page names.
	namedTest = regexp.MustCompile(`\b(Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*\*?`)
	// testFunc is one defined.
	testFunc = regexp.MustCompile(`(?m)^func ((Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)\(`)
	// namedFile is a file a page names in code quotes: a path, or a
	// file's own name.
	namedFile = regexp.MustCompile("`([A-Za-z0-9_][A-Za-z0-9_./-]*\\.(go|cql|yaml|yml|sh|mk|js|mjs|md))`")
	// elsewhere are files pages name that live in other projects: gocql's
	// retry loop, Cassandra's settings.
	elsewhere = map[string]bool{"query_executor.go": true, "cassandra.yaml": true}
)

// TestDocsNameWhatExists: a page that names a test or a file, and a
// comment that names a test, names one that exists, so a reader sent to
// `TestCrossedSignups` or `repository/castable.go` finds it after renames
// and moves. A path is read from the repository's root or from the page's
// folder; a file's own name matches any file of that name; a name ending
// in * matches the tests it begins.
func TestDocsNameWhatExists(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{}
	for _, file := range repoFiles(t, "_test.go") {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(raw), -1) {
			tests[m[1]] = true
		}
	}
	names := map[string]bool{}
	for _, file := range repoFiles(t, "") {
		names[path.Base(file)] = true
	}
	for _, file := range repoFiles(t, ".go") {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var comments strings.Builder
		for _, line := range strings.Split(string(raw), "\n") {
			if _, comment, ok := strings.Cut(line, "//"); ok {
				comments.WriteString(comment + "\n")
			}
		}
		checkTestNames(t, file, comments.String(), tests)
	}
	for _, page := range repoFiles(t, ".md") {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		checkTestNames(t, page, string(raw), tests)
		for _, m := range namedFile.FindAllStringSubmatch(string(raw), -1) {
			p := m[1]
			if !strings.Contains(p, "/") {
				if !names[p] && !elsewhere[p] {
					t.Errorf("%s names %s: no file of that name", page, p)
				}
				continue
			}
			if _, err := os.Stat(p); err == nil {
				continue
			}
			if _, err := os.Stat(path.Join(path.Dir(page), p)); err != nil {
				t.Errorf("%s names %s: no such file", page, p)
			}
		}
	}
}

// checkTestNames reports each test text names that no test file defines.
func checkTestNames(t *testing.T, file, text string, tests map[string]bool) {
	t.Helper()
	for _, name := range namedTest.FindAllString(text, -1) {
		if prefix, ok := strings.CutSuffix(name, "*"); ok {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(tests)), func(n string) bool { return strings.HasPrefix(n, prefix) }) {
				t.Errorf("%s names %s: no test begins so", file, name)
			}
			continue
		}
		if !tests[name] {
			t.Errorf("%s names %s: no such test", file, name)
		}
	}
}
