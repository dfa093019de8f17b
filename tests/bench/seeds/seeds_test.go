//go:build seeds

package seeds

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scylladb/gocqlx/v2"

	"shelf/repository"
	"shelf/tests/testkit"
	"shelf/tools/localcassandra"
)

// addresses are the cluster's nodes (other tests use .7, .11-13, .31-33).
var addresses = [3]string{"127.0.0.21", "127.0.0.22", "127.0.0.23"}

// lease is the TTL of a pending claim for shelf and of a lock column for
// Astyanax: shelf's default (SHELF_CLAIM_LEASE). The gist's lock keeps its
// own 10 s.
const lease = 30 * time.Second

// concurrencies are how many claimants race for one pair.
var concurrencies = []int{1, 8, 64}

// defaultRounds keeps the whole run (cluster start included) to a few
// minutes on a two-core machine.
const defaultRounds = 20

// nemesisMinimum is how long a line with the nemesis runs at least (more
// rounds than asked for if need be), so that every line sees several hangs.
const nemesisMinimum = 40 * time.Second

// TestSeeds starts a three-node cluster of its own (RF 3, QUORUM / SERIAL)
// and runs every pattern at every concurrency for SEEDS_ROUNDS rounds,
// first on a quiet cluster, then while a nemesis hangs one node at a time
// (SIGSTOP for 2-8 s, then SIGCONT, over and over: hangs shorter and longer
// than the client's 5 s timeout), each such line for at least 40 s. Each round is a fresh
// pair raced for by all claimants at once. Afterwards each round's pair is
// read back from the database and compared with what the claimants
// believe. It prints a markdown table; it fails only when it cannot run.
func TestSeeds(t *testing.T) {
	rounds := defaultRounds
	if env := os.Getenv("SEEDS_ROUNDS"); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n < 1 {
			t.Fatalf("SEEDS_ROUNDS=%q is not a positive number", env)
		}
		rounds = n
	}
	started := time.Now()
	c := startCluster(t)
	s := connect(t, c)
	patterns := []Pattern{
		NewGist(s),
		NewAstyanax(s, lease),
		NewPoll(s),
		NewShelf(repository.NewDB(s, "SERIAL"), lease),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	for _, p := range patterns {
		if err := p.Setup(ctx); err != nil {
			cancel()
			t.Fatalf("%s: setup: %v", p.Name(), err)
		}
	}
	cancel()
	t.Logf("cluster and tables ready after %.0fs; %d rounds per line", time.Since(started).Seconds(), rounds)

	var cells []Cell
	for _, nemesis := range []bool{false, true} {
		tag := map[bool]string{false: "quiet", true: "hung"}[nemesis]
		for pi, p := range patterns {
			for _, n := range concurrencies {
				cell := runCell(t, c, p, fmt.Sprintf("%s%d-%d", tag, pi, n), n, rounds, nemesis)
				t.Logf("%s, %d claimants, nemesis %v: %d duplicates, %d splits, %d false rejections, %d/%d errors, %.1f pairs/s, p99 %s, db ≠ belief %d, db splits %d",
					cell.Pattern, n, nemesis, cell.Duplicates, cell.Splits, cell.FalseRejections, cell.Errors, cell.Attempts,
					cell.PairsPerSecond(), formatMS(cell.P99()), cell.DBDisagrees, cell.DBSplits)
				cells = append(cells, cell)
			}
		}
	}
	// Each pattern's lines together, quiet and hung side by side.
	order := func(c Cell) int {
		return slices.IndexFunc(patterns, func(p Pattern) bool { return p.Name() == c.Pattern })*1000 + c.Claimants
	}
	slices.SortStableFunc(cells, func(a, b Cell) int { return cmp.Compare(order(a), order(b)) })
	table := Table(cells)
	fmt.Printf("\nThe seeds' patterns beside shelf: 3 nodes, RF 3, QUORUM / SERIAL, %d rounds per line (lines with the nemesis: at least 40 s), %.0fs in all\n\n%s\n",
		rounds, time.Since(started).Seconds(), table)
	t.Log("\n" + table)
}

// runCell runs the rounds of one pattern at one concurrency, then reads
// every round's pair back. Every name starts with prefix, which no other
// line shares.
func runCell(t *testing.T, c *cluster, p Pattern, prefix string, claimants, rounds int, nemesis bool) Cell {
	t.Helper()
	cell := Cell{Pattern: p.Name(), Claimants: claimants, Hangs: -1}
	var stop func() int
	if nemesis {
		stop = c.hangNodes(t)
	}
	var played []Round
	start := time.Now()
	for r := 0; r < rounds || nemesis && time.Since(start) < nemesisMinimum; r++ {
		id := fmt.Sprintf("%s-%d", prefix, r)
		round := Round{
			Pair:      Pair{Username: "user-" + id, Email: "user-" + id + "@example.com"},
			Claimants: make([]string, claimants),
			Won:       make([]Won, claimants),
			Errs:      make([]error, claimants),
		}
		latencies := make([]time.Duration, claimants)
		go1 := make(chan struct{})
		var wg sync.WaitGroup
		for i := range claimants {
			round.Claimants[i] = fmt.Sprintf("u_%s-%d", id, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-go1
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				t0 := time.Now()
				round.Won[i], round.Errs[i] = p.Claim(ctx, round.Pair, round.Claimants[i])
				latencies[i] = time.Since(t0)
			}()
		}
		close(go1)
		wg.Wait()
		cell.Add(round)
		cell.Latencies = append(cell.Latencies, latencies...)
		played = append(played, round)
	}
	cell.Elapsed = time.Since(start)
	if nemesis {
		cell.Hangs = stop()
	}

	// Read back once every node is answering again.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cell.DBChecked = true
	for _, round := range played {
		users, emails, err := p.Holders(ctx, round.Pair)
		if err != nil {
			t.Logf("%s: reading back %v: %v", p.Name(), round.Pair, err)
			cell.DBChecked = false
			break
		}
		cell.AddDB(round.DBVerdict(users, emails))
	}
	return cell
}

// cluster is the benchmark's three nodes.
type cluster struct{ *testkit.Cluster }

func startCluster(t *testing.T) *cluster {
	return &cluster{testkit.StartCluster(t, "seeds", addresses, testLog{t})}
}

// connect creates the keyspace (RF 3) and opens a session on it at QUORUM
// / SERIAL, with shelf's default client timeout of 5 s.
func connect(t *testing.T, c *cluster) gocqlx.Session {
	t.Helper()
	conn := testkit.ConnConfig(c.Hosts(), "seeds")
	conn.Consistency = "QUORUM"
	conn.SerialConsistency = "SERIAL"
	conn.Timeout = 5 * time.Second
	return c.Connect(t, conn)
}

// hangNodes starts the nemesis: a random node is hung (SIGSTOP) for 2-8 s
// and resumed (SIGCONT), then a second of peace, over and over. The
// function it returns stops it, resumes every node, waits until each
// answers CQL again and says how many hangs there were.
func (c *cluster) hangNodes(t *testing.T) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		hangs := 0
		defer func() { done <- hangs }()
		for {
			node := c.Nodes[rand.IntN(len(c.Nodes))]
			if err := c.L.Signal(node, syscall.SIGSTOP); err != nil {
				t.Logf("nemesis: hang %s: %v", node.Name, err)
				return
			}
			hangs++
			select {
			case <-ctx.Done():
			case <-time.After(2*time.Second + rand.N(6*time.Second)):
			}
			if err := c.L.Signal(node, syscall.SIGCONT); err != nil {
				t.Logf("nemesis: resume %s: %v", node.Name, err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() int {
		cancel()
		hangs := <-done
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, n := range c.Nodes {
			_ = c.L.Signal(n, syscall.SIGCONT)
			for !localcassandra.Answering(ctx, n.Address) && ctx.Err() == nil {
				time.Sleep(500 * time.Millisecond)
			}
		}
		return hangs
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
