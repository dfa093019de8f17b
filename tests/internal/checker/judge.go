package checker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelf/tools/localcassandra"
)

// RunDir makes the folder of one run's files, <repository>/<folder>/<time>
// (folder is ignored by git: .nemesis, .regions).
func RunDir(t testing.TB, folder string) string {
	t.Helper()
	root, err := localcassandra.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, folder, time.Now().UTC().Format("20060102-150405"))
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// EnvDuration is the duration the environment variable name gives, def
// when it is unset.
func EnvDuration(t testing.TB, name string, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// WriteVerdicts writes each verdict on its own lines and returns how many
// violations they hold in all.
func WriteVerdicts(b *strings.Builder, verdicts []Verdict) int {
	failed := 0
	for _, v := range verdicts {
		b.WriteString(v.String() + "\n")
		failed += len(v.Violations)
	}
	return failed
}

// Judge ends a run. When a deliberately broken build or setting ran
// (broken says which), the run passes only if one of the caught verdicts
// (U1, U3) reports a violation: the checker must see what was broken.
// Otherwise any violation fails it, the failing verdicts repeated last
// (CI shows the tail of the output).
func Judge(t testing.TB, broken string, verdicts []Verdict, caught ...Verdict) {
	t.Helper()
	if broken != "" {
		n := 0
		for _, v := range caught {
			n += len(v.Violations)
		}
		if n == 0 {
			t.Fatalf("%s ran and the checker reported no U1 or U3 violation", broken)
		}
		t.Logf("the checker caught %s: %d U1/U3 violations", broken, n)
		return
	}
	failed := 0
	var fails strings.Builder
	for _, v := range verdicts {
		if len(v.Violations) > 0 {
			failed += len(v.Violations)
			fails.WriteString("\n" + v.String())
		}
	}
	if failed > 0 {
		t.Fatalf("%d violations:%s", failed, fails.String())
	}
}
