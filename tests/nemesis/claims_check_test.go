//go:build nemesis

package nemesis

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"shelf/tests/internal/checker"
)

// TestRecheckClaims checks the claims of a saved run again (`make
// nemesis-recheck RUN=.nemesis/<time>`: its history.jsonl and
// holders.json).
func TestRecheckClaims(t *testing.T) {
	dir := os.Getenv("NEMESIS_RECHECK")
	if dir == "" {
		t.Fatal("NEMESIS_RECHECK names no saved run")
	}
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var last time.Time
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
		if e.End.After(last) {
			last = e.End
		}
	}
	var holders map[string]string
	if b, err := os.ReadFile(filepath.Join(dir, "holders.json")); err == nil {
		err = json.Unmarshal(b, &holders)
		if err != nil {
			t.Fatal(err)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, holders, err = readKeys(ctx); err != nil {
			t.Fatalf("no holders.json and the cluster cannot be read: %v", err)
		}
	}
	started := time.Now()
	v := checker.CheckClaims(events, last.Add(time.Second), holders, dir)
	t.Logf("%s (%.1fs)", v, time.Since(started).Seconds())
	if len(v.Violations) > 0 {
		t.Fail()
	}
}
