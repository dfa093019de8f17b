package degraded

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestThreadTicksReadsThisProcess reads the test's own threads from /proc.
func TestThreadTicksReadsThisProcess(t *testing.T) {
	threads, err := threadTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	main, ok := threads[os.Getpid()]
	if !ok {
		t.Fatalf("no main thread among %d", len(threads))
	}
	if main.name == "" || !strings.HasPrefix("degraded.test", main.name) {
		t.Errorf("main thread named %q, want the test binary's name", main.name)
	}
}

// TestThreadGroup sorts HotSpot's threads by what they do.
func TestThreadGroup(t *testing.T) {
	for name, want := range map[string]string{
		"C2 CompilerThre": "jit", "C1 CompilerThre": "jit",
		"GC Thread#0": "gc", "G1 Conc#0": "gc", "G1 Refine#0": "gc", "VM Thread": "gc",
		"ReadStage-3": "other", "Native-Transpor": "other", "java": "other", "CompactionExecu": "other",
	} {
		if got := threadGroup(name); got != want {
			t.Errorf("threadGroup(%q) = %s, want %s", name, got, want)
		}
	}
}

// TestNodeCPU turns readings into seconds: a process's first reading only
// records, a thread begun since counts from zero, and a restarted node
// (a new pid) starts again.
func TestNodeCPU(t *testing.T) {
	c := &nodeCPU{last: map[[2]int]time.Duration{}, seen: map[int]bool{}}
	t0 := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	if _, ok := c.add(t0, "n1", 10, map[int]threadTime{11: {"C2 CompilerThre", 5000 * time.Millisecond}, 12: {"ReadStage-1", 9000 * time.Millisecond}}); ok {
		t.Fatal("a process's first reading made a sample")
	}
	s, ok := c.add(t0.Add(time.Second), "n1", 10, map[int]threadTime{
		11: {"C2 CompilerThre", 5600 * time.Millisecond}, 12: {"ReadStage-1", 9200 * time.Millisecond}, 13: {"GC Thread#1", 100 * time.Millisecond},
	})
	if !ok || !near(s.Cores, 0.9) || !near(s.JIT, 0.6) || !near(s.GC, 0.1) {
		t.Fatalf("second reading = %+v, %v; want 0.9 cores, 0.6 jit, 0.1 gc", s, ok)
	}
	if _, ok := c.add(t0.Add(2*time.Second), "n1", 20, map[int]threadTime{21: {"java", 3000 * time.Millisecond}}); ok {
		t.Error("a restarted node's first reading made a sample")
	}
	if s, _ := c.add(t0.Add(3*time.Second), "n1", 20, map[int]threadTime{21: {"java", 3500 * time.Millisecond}}); !near(s.Cores, 0.5) {
		t.Errorf("restarted node's second = %v cores, want 0.5", s.Cores)
	}
}

// TestCPUIn averages each node's seconds in a window (a second counts
// where its middle falls) and shows a node with none as down.
func TestCPUIn(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	sec := func(s int, node string, cores, jit float64) cpuSample {
		return cpuSample{At: t0.Add(time.Duration(s) * time.Second), Node: node, Cores: cores, JIT: jit}
	}
	samples := []cpuSample{
		sec(1, "a", 0.2, 0), // its middle, 0.5 s, is before the window
		sec(2, "a", 0.4, 0.1), sec(3, "a", 0.8, 0.3), sec(3, "b", 1.0, 0.5),
		sec(5, "a", 2.0, 2.0), // middle 4.5 s: after
	}
	w := window{Name: "w", From: t0.Add(time.Second), To: t0.Add(3 * time.Second)}
	in := cpuIn(w, samples)
	if a := in["a"]; !near(a.Cores, 0.6) || !near(a.JIT, 0.2) {
		t.Errorf("a = %+v, want 0.6 cores, 0.2 jit", a)
	}
	if b := in["b"]; !near(b.Cores, 1.0) {
		t.Errorf("b = %+v, want 1.0 cores", b)
	}
	tbl := cpuTable([]window{w}, []string{"a", "b", "c"}, samples)
	if !strings.Contains(tbl, "| w | 0.60 (jit 0.20, gc 0.00) | 1.00 (jit 0.50, gc 0.00) | down |") {
		t.Errorf("table:\n%s", tbl)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestWarmedUp: the nodes are warm only when each one's compiler threads
// averaged under warmJIT over the last warmOver, each sampled in at least
// half of those seconds; earlier seconds do not count.
func TestWarmedUp(t *testing.T) {
	now := time.Unix(1000, 0)
	nodes := []string{"a", "b"}
	series := func(node string, seconds int, jit float64) []cpuSample {
		var out []cpuSample
		for i := range seconds {
			out = append(out, cpuSample{At: now.Add(-time.Duration(i) * time.Second), Node: node, Cores: 0.5, JIT: jit})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []cpuSample
		want    bool
	}{
		{"both calm", append(series("a", 10, 0.05), series("b", 10, 0.09)...), true},
		{"one compiling", append(series("a", 10, 0.05), series("b", 10, 0.12)...), false},
		{"one not sampled", series("a", 10, 0.05), false},
		{"one sampled for too few seconds", append(series("a", 10, 0.05), series("b", 4, 0.01)...), false},
		{"compiling only before the last seconds", append(series("a", 10, 0.05),
			append(series("b", 10, 0.05), cpuSample{At: now.Add(-20 * time.Second), Node: "b", JIT: 2})...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jit, warm := warmedUp(tc.samples, nodes, now)
			if warm != tc.want {
				t.Fatalf("warm = %v (%v), want %v", warm, jit, tc.want)
			}
		})
	}
}
