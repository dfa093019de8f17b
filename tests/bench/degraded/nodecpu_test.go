package degraded

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"shelf/tests/testkit"
)

// threadGroup says what a JVM thread does, from its name as /proc gives
// it (at most 15 characters): compiling ("jit": HotSpot's C1 and C2
// compiler threads), collecting ("gc": the collector's threads and the VM
// thread that brings the others to safepoints), or anything else
// ("other": requests, replicas' work, flushes, compactions, start-up).
func threadGroup(name string) string {
	switch {
	case strings.HasPrefix(name, "C1 CompilerThre"), strings.HasPrefix(name, "C2 CompilerThre"):
		return "jit"
	case strings.HasPrefix(name, "GC Thread"), strings.HasPrefix(name, "G1 "), name == "VM Thread":
		return "gc"
	}
	return "other"
}

// cpuSample is one node's CPU over the second before At, in cores: all
// its threads', and its compiler and collector threads'.
type cpuSample struct {
	At    time.Time `json:"at"`
	Node  string    `json:"node"`
	Cores float64   `json:"cores"`
	JIT   float64   `json:"jit"`
	GC    float64   `json:"gc"`
}

// nodeCPU samples the nodes' threads every second: what each node spends
// its CPU on (docs/design/node-faults.md: a node just restarted spends
// most of it compiling).
type nodeCPU struct {
	mu      sync.Mutex
	samples []cpuSample
	// last is each thread's CPU time at the sample before, by pid and
	// thread id; a thread not in it began after that sample.
	last map[[2]int]time.Duration
	// seen is the pids sampled before: a process's first sample only
	// records its threads' times.
	seen map[int]bool
}

// sampleNodes samples the nodes pids names (node address to pid; a
// stopped node is absent) every second until ctx ends.
func sampleNodes(ctx context.Context, pids func() map[string]int) *nodeCPU {
	c := &nodeCPU{last: map[[2]int]time.Duration{}, seen: map[int]bool{}}
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			now := time.Now()
			for node, pid := range pids() {
				threads, err := threadTicks(pid)
				if err != nil {
					continue // it ended between the two reads
				}
				if s, ok := c.add(now, node, pid, threads); ok {
					c.mu.Lock()
					c.samples = append(c.samples, s)
					c.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return c
}

// add turns one reading of a process's threads (id to name and CPU time)
// into the second's sample; ok is false for the process's first reading.
func (c *nodeCPU) add(at time.Time, node string, pid int, threads map[int]threadTime) (cpuSample, bool) {
	s := cpuSample{At: at, Node: node}
	first := !c.seen[pid]
	c.seen[pid] = true
	for tid, t := range threads {
		key := [2]int{pid, tid}
		before := c.last[key] // 0 for a thread begun since the sample before
		c.last[key] = t.cpu
		if first || t.cpu < before {
			continue
		}
		cores := (t.cpu - before).Seconds()
		s.Cores += cores
		switch threadGroup(t.name) {
		case "jit":
			s.JIT += cores
		case "gc":
			s.GC += cores
		}
	}
	return s, !first
}

// all is every sample so far.
func (c *nodeCPU) all() []cpuSample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cpuSample(nil), c.samples...)
}

// threadTime is one thread's name and CPU time so far (user and system).
type threadTime struct {
	name string
	cpu  time.Duration
}

// threadTicks reads every thread of pid from /proc.
func threadTicks(pid int) (map[int]threadTime, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[int]threadTime, len(tasks))
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		if name, cpu, ok := testkit.ParseStat(string(b)); ok {
			out[tid] = threadTime{name: name, cpu: cpu}
		}
	}
	return out, nil
}

// in reports whether the sample's second counts in w: its middle falls
// in it.
func (s cpuSample) in(w window) bool {
	mid := s.At.Add(-time.Second / 2)
	return !mid.Before(w.From) && mid.Before(w.To)
}

// cpuIn is each node's average over the window's seconds (a sample counts
// in the window its second's middle falls in): cores in all, compiling,
// collecting. A node with no sample in it (down) is absent.
func cpuIn(w window, samples []cpuSample) map[string]cpuSample {
	sums := map[string]cpuSample{}
	counts := map[string]int{}
	for _, s := range samples {
		if !s.in(w) {
			continue
		}
		a := sums[s.Node]
		a.Node = s.Node
		a.Cores += s.Cores
		a.JIT += s.JIT
		a.GC += s.GC
		sums[s.Node] = a
		counts[s.Node]++
	}
	for node, a := range sums {
		n := float64(counts[node])
		a.Cores, a.JIT, a.GC = a.Cores/n, a.JIT/n, a.GC/n
		sums[node] = a
	}
	return sums
}

// cpuTable is a markdown table of each node's CPU in each window: cores
// in all, of them compiling and collecting.
func cpuTable(windows []window, nodes []string, samples []cpuSample) string {
	var b strings.Builder
	b.WriteString("| window |")
	for _, n := range nodes {
		b.WriteString(" " + n + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(nodes)) + "\n")
	for _, w := range windows {
		in := cpuIn(w, samples)
		fmt.Fprintf(&b, "| %s |", w.Name)
		for _, n := range nodes {
			if s, ok := in[n]; ok {
				fmt.Fprintf(&b, " %.2f (jit %.2f, gc %.2f) |", s.Cores, s.JIT, s.GC)
			} else {
				b.WriteString(" down |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// A run's healthy window is measured once the nodes' compilers have
// calmed: after warmAtLeast, when every node's compiler threads took under
// warmJIT cores averaged over the last warmOver, or after warmAtMost in
// any case (the run says so). The first 30 s left each node compiling with
// 0.15-0.2 cores, as much again as at rest later, so the healthy window ran
// on JVMs colder than every window after it and flattered each ratio.
const (
	warmAtLeast = 30 * time.Second
	warmAtMost  = 3 * time.Minute
	warmOver    = 10 * time.Second
	warmJIT     = 0.1
)

// warmedUp reports whether every node of nodes had its compiler threads
// take under warmJIT cores averaged over the warmOver before now (each
// node sampled at least half of those seconds), and each node's average.
func warmedUp(samples []cpuSample, nodes []string, now time.Time) (map[string]float64, bool) {
	w := window{From: now.Add(-warmOver), To: now}
	in := cpuIn(w, samples)
	seconds := map[string]int{}
	for _, s := range samples {
		if s.in(w) {
			seconds[s.Node]++
		}
	}
	jit := map[string]float64{}
	warm := true
	for _, n := range nodes {
		s, ok := in[n]
		jit[n] = s.JIT
		warm = warm && ok && seconds[n] >= int(warmOver/time.Second)/2 && s.JIT < warmJIT
	}
	return jit, warm
}

// warmUp waits, from started, until warmedUp says the nodes are warm or
// warmAtMost has passed, and says which and how long it took.
func (c *nodeCPU) warmUp(started time.Time, nodes []string) warming {
	time.Sleep(time.Until(started.Add(warmAtLeast)))
	for {
		jit, warm := warmedUp(c.all(), nodes, time.Now())
		took := time.Since(started)
		if warm || took >= warmAtMost {
			return warming{Seconds: took.Seconds(), JIT: jit, Warm: warm}
		}
		time.Sleep(time.Second)
	}
}

// warming is how the warm-up ended: its length, each node's compiler
// threads' cores over its last seconds, and whether they were under
// warmJIT.
type warming struct {
	Seconds float64            `json:"seconds"`
	JIT     map[string]float64 `json:"jit"`
	Warm    bool               `json:"warm"`
}

// describe is each node's compiler cores, in nodes' order, and whether
// they were under warmJIT.
func (w warming) describe(nodes []string) string {
	var parts []string
	for _, n := range nodes {
		parts = append(parts, fmt.Sprintf("%s %.2f", n, w.JIT[n]))
	}
	if !w.Warm {
		return strings.Join(parts, ", ") + fmt.Sprintf(" (not all under %.2f after %v: measured anyway)", warmJIT, warmAtMost)
	}
	return strings.Join(parts, ", ")
}
