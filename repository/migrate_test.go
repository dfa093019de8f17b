package repository

import (
	"io/fs"
	"regexp"
	"testing"

	"github.com/scylladb/gocqlx/v2/migrate"

	"shelf/schema"
)

// TestEveryMigrationCallHasItsStep: each `-- CALL name;` of the schema
// files names a step of migrationCalls (gocqlx's migrate stops a file at
// a call it cannot find), and each step is called by some file.
func TestEveryMigrationCallHasItsStep(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(schema.FS, "*.cql")
	if err != nil {
		t.Fatal(err)
	}
	callRE := regexp.MustCompile(`(?m)^-- *CALL +(\S+);$`)
	called := map[string]bool{}
	for _, name := range names {
		b, err := fs.ReadFile(schema.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range callRE.FindAllStringSubmatch(string(b), -1) {
			called[m[1]] = true
			if migrationCalls.Find(migrate.CallComment, m[1]) == nil {
				t.Errorf("%s calls %s, which is no step of migrationCalls", name, m[1])
			}
		}
	}
	for _, step := range []string{"copy_session_index"} {
		if !called[step] {
			t.Errorf("the step %s is called by no schema file", step)
		}
	}
}
