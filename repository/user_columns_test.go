package repository

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestUserStatementsFollowOneColumnList holds every spelling of the users
// table's columns to userColumnNames: the SET clause of the updates, the
// insert's placeholders, the values every write binds and the row's db
// tags (which the reads scan into). A column added to one and not the
// others fails here, not on a node.
func TestUserStatementsFollowOneColumnList(t *testing.T) {
	t.Parallel()
	names := strings.Split(userColumnNames, ", ")
	var set []string
	for _, n := range names {
		set = append(set, n+" = ?")
	}
	got := strings.Join(set, ", ")
	if userColumns != got {
		t.Errorf("userColumns is not userColumnNames as a SET clause:\n got %s\nwant %s", userColumns, got)
	}
	// Writes bind search_grams and username_prefixes too (the indexes'
	// alone: no read scans them).
	written := append(slices.Clone(names), "search_grams", "username_prefixes")
	if userWriteColumnNames != strings.Join(written, ", ") || userWriteColumns != got+", search_grams = ?, username_prefixes = ?" {
		t.Errorf("the write lists are not the column list, search_grams and username_prefixes:\n %s\n %s", userWriteColumnNames, userWriteColumns)
	}
	// The id, then every column; USING TTL has its own.
	if got, want := strings.Count(string(userInsertCQL), "?"), len(written)+2; got != want {
		t.Errorf("the insert binds %d values, want %d (id, %d columns, TTL)", got, want, len(written))
	}
	if got := len(userRow{}.values("w", nil)); got != len(written) {
		t.Errorf("values binds %d columns, want %d", got, len(written))
	}
	var tags []string
	rt := reflect.TypeFor[userRow]()
	for i := range rt.NumField() {
		// The moderation hold is read, and written by Hold alone.
		if tag := rt.Field(i).Tag.Get("db"); tag != "" && tag != "id" && tag != "moderation_hold" {
			tags = append(tags, tag)
		}
	}
	slices.Sort(tags)
	sorted := slices.Sorted(slices.Values(names))
	if !slices.Equal(tags, sorted) {
		t.Errorf("userRow's db tags %v are not the column list %v", tags, sorted)
	}
	// The narrow reads select columns of the list, each once, the key first.
	for _, stmt := range []readCQL{userProfileCQL, userAccessCQL, userCredentialsCQL, userShownCQL, userSignedInCQL, userStandingCQL} {
		cols := selectColumns(string(stmt))
		if cols[0] != "id" || !strings.HasSuffix(string(stmt), " FROM users WHERE id = ?") {
			t.Errorf("%q does not read one users row by its key first", stmt)
		}
		for i, c := range cols[1:] {
			if !slices.Contains(names, c) || slices.Contains(cols[:i+1], c) {
				t.Errorf("%q selects %s: not a column of the list, or twice", stmt, c)
			}
		}
	}
}
