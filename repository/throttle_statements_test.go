package repository

import (
	"regexp"
	"strings"
	"testing"
)

// TestTheThrottleNeverDeletes: no statement of the package deletes from
// a throttle table (docs/design/throttle.md). A deletion is a tombstone
// that every later read of the partition meets until it is purged: one
// per refused try, thousands a minute from one address, and reads of the
// login failed at tombstone_failure_threshold. An attempt's outcome is an
// update of its own row, and every row leaves by its TTL.
func TestTheThrottleNeverDeletes(t *testing.T) {
	t.Parallel()
	deletes := regexp.MustCompile(`(?is)^\s*DELETE\b.*\bFROM\s+(throttle_[a-z_]*)`)
	writes := 0
	for pos, s := range packageStrings(t) {
		if m := deletes.FindStringSubmatch(s); m != nil {
			t.Errorf("%s: a deletion from %s: %s", pos, m[1], s)
		}
		if m := writeRE.FindStringSubmatch(s); m != nil && strings.HasPrefix(strings.ToLower(m[2]), "throttle_") {
			writes++
		}
	}
	if writes == 0 {
		t.Fatal("found no write to a throttle table: the scan is broken")
	}
}
