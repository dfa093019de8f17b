package repository

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// selectColumns names the columns a SELECT reads (after DISTINCT), aliases
// for expressions: the text between SELECT and FROM, split at the commas
// outside parentheses.
func selectColumns(stmt string) []string {
	cols, _, _ := strings.Cut(strings.TrimPrefix(stmt, "SELECT "), " FROM ")
	cols = strings.TrimPrefix(cols, "DISTINCT ")
	var out []string
	depth, start := 0, 0
	for i, c := range cols + "," {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			col := strings.TrimSpace(cols[start:min(i, len(cols))])
			if _, alias, ok := strings.Cut(col, " AS "); ok {
				col = alias
			}
			out = append(out, col)
			start = i + 1
		}
	}
	return out
}

// fieldNames names, in order, the fields row's columns() points into: each
// field's db tag, or its name (the fields of an embedded row type too).
func fieldNames(row interface{ columns() []any }) ([]string, error) {
	fields := map[uintptr]map[reflect.Type]string{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(v.Field(i))
				continue
			}
			name := f.Tag.Get("db")
			if name == "" {
				name = f.Name
			}
			addr := v.Field(i).Addr().Pointer()
			if fields[addr] == nil {
				fields[addr] = map[reflect.Type]string{}
			}
			fields[addr][f.Type] = name
		}
	}
	walk(reflect.ValueOf(row).Elem())
	var out []string
	for _, p := range row.columns() {
		name := fields[reflect.ValueOf(p).Pointer()][reflect.TypeOf(p).Elem()]
		if name == "" {
			return nil, fmt.Errorf("a destination of %T is not one of its fields", row)
		}
		out = append(out, name)
	}
	return out, nil
}

// rowSelects are the package's multi-column SELECTs, each with the row
// type its reads scan into.
var rowSelects = []struct {
	stmt string
	row  interface{ columns() []any }
}{
	{string(userSelectCQL), &userRow{}},
	{string(userProfileCQL), &profileRow{}},
	{string(userAccessCQL), &accessRow{}},
	{string(userCredentialsCQL), &credentialsRow{}},
	{string(userShownCQL), &shownRow{}},
	{string(userClaimedCQL), &claimedRow{}},
	{string(userSignedInCQL), &signedInRow{}},
	{string(userStandingCQL), &standingRow{}},
	{string(auditUsersCQL), &userRow{}},
	{string(userSearch1CQL), &foundRow{}},
	{string(userSearch2CQL), &foundRow{}},
	{string(userSearch3CQL), &foundRow{}},
	{string(userSearch4CQL), &foundRow{}},
	{string(peopleCQL), &personRow{}},
	{string(indexUsersCQL), &gramsRow{}},
	{string(indexUserCQL), &gramsRow{}},
	{string(groupSelectCQL), &groupRow{}},
	{string(jobSelectCQL), &jobRow{}},
	{string(jobQueueSinceCQL), &jobQueueRow{}},
	{string(queueStartAtCQL), &queueStartRow{}},
	{string(jobQueueLegacyDayCQL), &jobQueueRow{}},
	{string(moderationAttemptSinceCQL), &moderationAttemptRow{}},
	{string(moderationAttemptLegacyDayCQL), &moderationAttemptRow{}},
	{string(contentSelectCQL), &contentRow{}},
	{string(contentStatesCQL), &stateRow{}},
	{string(claimSelectCQL), &claimRow{}},
	{string(sessionSelectCQL), &sessionRow{}},
	{string(sessionsOfUserCQL), &sessionIndexRow{}},
	{string(sessionsPageCQL), &sessionIndexRow{}},
	{string(sessionsPageBeforeCQL), &sessionIndexRow{}},
	{string(sessionEntryCQL), &sessionIndexRow{}},
	{string(sessionsToCopyCQL), &sessionCopyRow{}},
	{string(sessionsSelectManyCQL), &sessionDetailRow{}},
	{string(triesSelectCQL), &tryRow{}},
	{string(failuresSelectCQL), &failureRow{}},
	{string(slotsSelectCQL), &slotRow{}},
	{string(tokenSelectCQL), &tokenRow{}},
	{string(factorSelectCQL), &factorRow{}},
	{string(factorRowCQL), &factorRow{}},
	{string(libSliceCQL), &libRow{}},
	{string(libSliceAfterCQL), &libRow{}},
	{string(libSliceAscCQL), &libRow{}},
	{string(libSliceAscAfterCQL), &libRow{}},
	{string(indexSelectCQL), &indexRow{}},
	{string(indexPageCQL), &indexRow{}},
	{string(contentMemberFindCQL), &contentMemberRow{}},
	{string(contentMemberPageCQL), &contentMemberRow{}},
	{string(contentMemberGroupsCQL), &contentMemberRow{}},
	{string(gmPageCQL), &memberRow{}},
	{string(gmPageAfterCQL), &memberRow{}},
	{string(outboxBucketCQL), &markRow{}},
	{string(legacyPendingCQL), &markRow{}},
	{string(pageCQL), &statusRow{}},
	{string(pageAfterCQL), &statusRow{}},
	{string(auditStatusRowsCQL), &listEntry{}},
	{string(lookupSelectCQL), &lookupRow{}},
	{string(deletionSelectCQL), &deletionRow{}},
	{string(deletionSinceCQL), &deletionRow{}},
	{string(deletionLegacySelectCQL), &deletionRow{}},
	{string(deletionLegacyDayCQL), &deletionRow{}},
	{string(closingSinceCQL), &closingRow{}},
	{string(closingLegacyDayCQL), &closingRow{}},
	{string(changeSinceCQL), &changeRow{}},
	{string(changeLegacyDayCQL), &changeRow{}},
	{string(gmGroupsCQL), &memberOfRow{}},
	{string(gmGroupsAfter), &memberOfRow{}},
	{string(auditLookupsCQL), &lookupRow{}},
	{string(expirySelectCQL), &expiryRow{}},
	{string(auditPartitionsCQL), &partitionRow{}},
	{string(bucketsCQL), &bucketRow{}},
	{string(bucketsBeforeCQL), &bucketRow{}},
	{string(bucketEntryCQL), &bucketEntry{}},
	{string(auditBucketsCQL), &indexEntry{}},
	{string(historyPageCQL), &historyRow{}},
	{string(historyPageAfterCQL), &historyRow{}},
	{string(accountAuditPageCQL), &auditRow{}},
	{string(auditDayPageCQL), &dayRow{}},
	{string(auditDayPageAfterCQL), &dayRow{}},
	{string(accountAuditPageAfterCQL), &auditRow{}},
}

// valueSelects are the package's SELECTs read into one local each (Scan
// of one destination, or selectValues).
var valueSelects = []string{
	string(gmRoleCQL), string(gmGroupsOfCQL), string(gmGroupsAmong), string(bucketAnyRowCQL),
	string(auditListRowCQL), string(auditExpiryCQL), string(readinessCQL), string(queueStartCQL), string(nodeNowCQL), string(historyEntryCQL),
	string(replicationCQL), string(indexCountCQL), string(auditSinceCQL), string(sessionEpochCQL), string(accountAuditTagCQL),
	string(localDCCQL), string(peersDCCQL), string(slotSelectCQL),
}

// TestColumnsMatchSelects: every row type's scan destinations are, in
// order, the fields named like the columns its statements select (a
// swapped pair would put one column's value in another's field), and a
// statement read into one value selects one column.
func TestColumnsMatchSelects(t *testing.T) {
	t.Parallel()
	for _, tc := range rowSelects {
		got, err := fieldNames(tc.row)
		if err != nil {
			t.Fatal(err)
		}
		if want := selectColumns(tc.stmt); !reflect.DeepEqual(got, want) {
			t.Errorf("%T scans into %v; %q selects %v", tc.row, got, tc.stmt, want)
		}
	}
	for _, stmt := range valueSelects {
		if cols := selectColumns(stmt); len(cols) != 1 {
			t.Errorf("%q is scanned into one value but selects %v", stmt, cols)
		}
	}
}

// TestEverySelectIsChecked: each SELECT in the package's source (bar its
// tests) is in rowSelects or valueSelects, so a new read cannot skip
// TestColumnsMatchSelects.
func TestEverySelectIsChecked(t *testing.T) {
	t.Parallel()
	checked := map[string]bool{}
	for _, tc := range rowSelects {
		checked[tc.stmt] = true
	}
	for _, stmt := range valueSelects {
		checked[stmt] = true
	}
	n := 0
	for pos, s := range packageStrings(t) {
		if !strings.HasPrefix(s, "SELECT ") {
			continue
		}
		n++
		if !checked[s] {
			t.Errorf("%s: %q is not in rowSelects or valueSelects", pos, s)
		}
	}
	if n < len(checked) {
		t.Fatalf("found %d SELECTs in the source, %d checked: the scan is broken", n, len(checked))
	}
}

func TestSelectColumns(t *testing.T) {
	t.Parallel()
	for stmt, want := range map[string][]string{
		"SELECT a, b FROM t":                             {"a", "b"},
		"SELECT DISTINCT a, b FROM t":                    {"a", "b"},
		"SELECT a, WRITETIME(b) AS w FROM t WHERE a = ?": {"a", "w"},
		"SELECT token(a, b) AS k, c FROM t":              {"k", "c"},
	} {
		if got := selectColumns(stmt); !reflect.DeepEqual(got, want) {
			t.Errorf("selectColumns(%q) = %v, want %v", stmt, got, want)
		}
	}
}

// TestSliceEndsCoverTheRing: the audit's token ranges start just above
// MinInt64 (a token Murmur3 never gives), grow by 2^56 and end at MaxInt64.
func TestSliceEndsCoverTheRing(t *testing.T) {
	t.Parallel()
	prev := int64(math.MinInt64)
	for k := 1; k <= auditSlices; k++ {
		end := sliceEnd(k)
		if end <= prev {
			t.Fatalf("slice %d ends at %d, not after %d", k, end, prev)
		}
		if k < auditSlices && uint64(end-prev) != sliceWidth {
			t.Fatalf("slice %d is %d wide, want %d", k, uint64(end-prev), uint64(sliceWidth))
		}
		prev = end
	}
	if sliceEnd(auditSlices/2) != 0 || sliceEnd(auditSlices) != math.MaxInt64 {
		t.Fatalf("middle %d, end %d", sliceEnd(auditSlices/2), sliceEnd(auditSlices))
	}
}
