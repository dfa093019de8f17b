package testkit

import (
	"testing"
	"time"
)

// TestParseStat reads a thread's name and CPU time from its stat line,
// a name with spaces and parentheses included.
func TestParseStat(t *testing.T) {
	name, cpu, ok := ParseStat("4242 (C2 CompilerThre) S 1 4200 4200 0 -1 4194368 1000 0 0 0 731 29 0 0 20 0 40 0 123 0 0")
	if !ok || name != "C2 CompilerThre" || cpu != 7600*time.Millisecond {
		t.Fatalf("ParseStat = %q, %v, %v; want C2 CompilerThre and 7.6s", name, cpu, ok)
	}
	name, cpu, ok = ParseStat("7 (a) b (c)) R 1 1 1 0 -1 0 0 0 0 0 5 6 0 0")
	if !ok || name != "a) b (c)" || cpu != 110*time.Millisecond {
		t.Errorf("ParseStat of a name with parentheses = %q, %v, %v", name, cpu, ok)
	}
	if _, _, ok := ParseStat("7 (short) R 1"); ok {
		t.Error("a stat line without its times parsed")
	}
}
