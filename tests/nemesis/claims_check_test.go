//go:build nemesis

package nemesis

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkClaims checks with porcupine that the history's claims are
// linearizable per key (U1), with the database's holders read at horizon
// as the last read of every key. The steps of a key that cannot be
// linearized go to claims-<n>.html in dir, porcupine's picture of them.
func checkClaims(events []event, horizon time.Time, holders map[string]string, dir string) verdict {
	v := verdict{name: "U1 claims linearizable per key (porcupine)"}
	ops, known := claimHistory(events, horizon, holders)
	model := claimModel(known)
	for _, part := range model.Partition(ops) {
		v.checked++
		result, info := porcupine.CheckOperationsVerbose(model, part, time.Minute)
		if result == porcupine.Ok {
			continue
		}
		key := part[0].Input.(claimStep).Key
		if result == porcupine.Unknown {
			v.fail("%s: porcupine could not decide within a minute (%d steps)", key, len(part))
			continue
		}
		sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		var steps string
		for _, op := range part {
			steps += "\n      " + model.DescribeOperation(op.Input, nil)
		}
		path := filepath.Join(dir, fmt.Sprintf("claims-%d.html", len(v.violations)))
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			path = err.Error()
		}
		v.fail("%s: no order of its %d steps keeps one holder at a time (%s):%s", key, len(part), path, steps)
	}
	return v
}

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
		if _, holders, err = checkKeys(ctx); err != nil {
			t.Fatalf("no holders.json and the cluster cannot be read: %v", err)
		}
	}
	started := time.Now()
	v := checkClaims(events, last.Add(time.Second), holders, dir)
	t.Logf("%s (%.1fs)", v, time.Since(started).Seconds())
	if len(v.violations) > 0 {
		t.Fail()
	}
}
