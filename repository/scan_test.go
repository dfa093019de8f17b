package repository

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// selectColumns names the columns a SELECT reads, aliases for expressions.
func selectColumns(stmt string) []string {
	cols, _, _ := strings.Cut(strings.TrimPrefix(stmt, "SELECT "), " FROM ")
	var out []string
	for _, c := range strings.Split(cols, ",") {
		c = strings.TrimSpace(c)
		if _, alias, ok := strings.Cut(c, " AS "); ok {
			c = alias
		}
		out = append(out, c)
	}
	return out
}

// fieldNames names, in order, the fields row's columns() points into: each
// field's db tag, or its name.
func fieldNames(row interface{ columns() []any }) ([]string, error) {
	v := reflect.ValueOf(row).Elem()
	var out []string
	for _, p := range row.columns() {
		addr := reflect.ValueOf(p).Pointer()
		name := ""
		for i := range v.NumField() {
			if v.Field(i).Addr().Pointer() == addr && v.Field(i).Type() == reflect.TypeOf(p).Elem() {
				f := v.Type().Field(i)
				name = f.Tag.Get("db")
				if name == "" {
					name = f.Name
				}
			}
		}
		if name == "" {
			return nil, fmt.Errorf("a destination of %T is not one of its fields", row)
		}
		out = append(out, name)
	}
	return out, nil
}

// TestColumnsMatchSelects: every row type's scan destinations are, in
// order, the fields named like the columns its statements select (a
// swapped pair would put one column's value in another's field).
func TestColumnsMatchSelects(t *testing.T) {
	for _, tc := range []struct {
		stmt string
		row  interface{ columns() []any }
	}{
		{userSelectCQL, &userRow{}},
		{groupSelectCQL, &groupRow{}},
		{contentSelectCQL, &contentRow{}},
		{fmt.Sprintf(claimSelectCQL, "usernames"), &claimRow{}},
		{sessionSelectCQL, &sessionRow{}},
		{libSliceCQL, &libRow{}},
		{libSliceAfterCQL, &libRow{}},
		{indexSelectCQL, &indexRow{}},
		{indexPageCQL, &indexRow{}},
		{contentMemberFindCQL, &contentMemberRow{}},
		{contentMemberPageCQL, &contentMemberRow{}},
		{pageCQL, &statusRow{}},
		{pageAfterCQL, &statusRow{}},
		{bucketsCQL, &bucketRow{}},
		{bucketsBeforeCQL, &bucketRow{}},
	} {
		got, err := fieldNames(tc.row)
		if err != nil {
			t.Fatal(err)
		}
		if want := selectColumns(tc.stmt); !reflect.DeepEqual(got, want) {
			t.Errorf("%T scans into %v; %q selects %v", tc.row, got, tc.stmt, want)
		}
	}
}
