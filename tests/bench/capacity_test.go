//go:build bench

package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain/library"
	"shelf/domain/moderation"
	"shelf/tests/testkit"
	"shelf/tools/localcassandra"
)

// TestCapacity is `make capacity`: the inputs of the capacity model
// (docs/design/capacity-model.md). It writes a realistic mix through the
// api (signups with sessions, suspensions, items with descriptions,
// shares with users and groups, renames), copies every table's rows once
// into two twin keyspaces (one uncompressed, one with the default LZ4),
// lets Cassandra flush them and reads the SSTables' sizes on the local
// node's disk: bytes per row uncompressed (what partition-size limits are
// about) and on disk. Then it measures how many compare-and-sets one key
// takes a second as clients contend for it. It prints both tables and
// saves them under .bench/capacity-<time>.md.
func TestCapacity(t *testing.T) {
	h := setup(t)
	w := capacityWorkload{
		users:       setting("CAPACITY_USERS", 2000),
		suspensions: setting("CAPACITY_SUSPENSIONS", 600),
		items:       setting("CAPACITY_ITEMS", 3000),
		groups:      setting("CAPACITY_GROUPS", 30),
	}
	t0 := time.Now()
	if err := w.run(h); err != nil {
		t.Fatal(err)
	}
	t.Logf("workload: %d users, %d suspensions, %d items, %d groups in %s", w.users, w.suspensions, w.items, w.groups, time.Since(t0).Round(time.Second))

	dataDir, err := nodeDataDir()
	if err != nil {
		t.Fatal(err)
	}
	plain, packed := testkit.NewDB(t), testkit.NewDB(t)
	sizes, err := measureTables(h.db, plain, packed, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "# Capacity inputs, %s\n\n%s. `make capacity`.\n\n", t0.UTC().Format(time.RFC3339), machine())
	fmt.Fprintf(&out, "Workload through the api: %d users (each logged in once), %d suspended (half with an end), %d items by %d owners (name 30 characters, description 120, a link on a third; a third each public, loggedin, private), each shared with 2 users, a tenth with a group, %d groups of 20, a rename of every third item.\n\n", w.users, w.suspensions, w.items, w.owners(), w.groups)
	sizes.table(&out)

	tomb, err := measureTombstones(h, setting("CAPACITY_EDITS", 2000))
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString("\n")
	tomb.table(&out)

	lwtRound := setting("CAPACITY_LWT_ROUND", 4*time.Second)
	lwt, err := measureContention(h.db.Session.Session, lwtRound)
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString("\nOne node (RF 1), the keyspace above. ")
	lwt.table(&out)
	if setting("CAPACITY_CLUSTER", 1) == 1 {
		s := contentionCluster(t)
		lwt, err := measureContention(s, lwtRound)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("\nThree nodes of the test's own on the same two cores (RF 3, LOCAL_SERIAL / LOCAL_QUORUM). ")
		lwt.table(&out)
	}
	fmt.Println("\n" + out.String())
	if err := saveNamed("capacity-"+t0.UTC().Format("20060102-150405")+".md", out.String()); err != nil {
		t.Fatal(err)
	}
}

// capacityWorkload is the mix TestCapacity writes.
type capacityWorkload struct {
	users, suspensions, items, groups int
}

func (w capacityWorkload) owners() int { return max(1, w.items/10) }

// words returns n characters of lowercase letters and spaces, random (so
// no better compressed than real text).
func words(n int) string {
	b := make([]byte, n)
	for i := range b {
		if i%7 == 6 {
			b[i] = ' '
		} else {
			b[i] = byte('a' + rand.IntN(26))
		}
	}
	return string(b)
}

// parallel runs fn(i) for i in [0, n) on 16 workers; the first error wins.
func parallel(n int, fn func(i int) error) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan int)
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					first = firstErr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// firstErr keeps the first error.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (w capacityWorkload) run(h *harness) error {
	base := h.api.Base
	admin, err := signup(base)
	if err != nil {
		return err
	}
	if err := makeAdmin(h, admin); err != nil {
		return err
	}
	users := make([]account, w.users)
	if err := parallel(w.users, func(i int) (err error) {
		users[i], err = signup(base)
		return err
	}); err != nil {
		return err
	}
	// Suspensions of the last users (never owners or members below).
	if err := parallel(w.suspensions, func(i int) error {
		u := users[len(users)-1-i]
		body := fmt.Sprintf(`{"reason":%q}`, words(40))
		if i%2 == 0 {
			body = fmt.Sprintf(`{"reason":%q,"until":%q}`, words(40), time.Now().Add(30*24*time.Hour).UTC().Format(time.RFC3339))
		}
		return call(http.MethodPost, base+"/v1/users/"+u.id+"/suspension", admin.token, body, http.StatusCreated, nil)
	}); err != nil {
		return err
	}
	members := users[:len(users)-w.suspensions]
	groups := make([]string, w.groups)
	if err := parallel(w.groups, func(i int) error {
		owner := members[i%len(members)]
		var g struct{ ID string }
		name, _ := fresh()
		if err := call(http.MethodPost, base+"/v1/groups", owner.token, fmt.Sprintf(`{"name":%q,"description":%q}`, "g"+name, words(80)), http.StatusCreated, &g); err != nil {
			return err
		}
		groups[i] = g.ID
		for k := 1; k < 20; k++ {
			m := members[(i*20+k)%len(members)]
			if m.id == owner.id {
				continue
			}
			if err := call(http.MethodPut, base+"/v1/groups/"+g.ID+"/members/"+m.id, owner.token, `{"role":"member"}`, http.StatusCreated, nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	visibilities := []string{"public", "loggedin", "private"}
	return parallel(w.items, func(i int) error {
		owner := members[i%w.owners()%len(members)]
		body := map[string]string{"name": words(30), "description": words(120), "visibility": visibilities[i%3]}
		if i%3 == 0 {
			body["link"] = "https://example.org/" + strings.ReplaceAll(words(20), " ", "-")
		}
		b, _ := json.Marshal(body)
		var c struct{ ID string }
		if err := call(http.MethodPost, base+"/v1/content", owner.token, string(b), http.StatusCreated, &c); err != nil {
			return err
		}
		for k := 1; k <= 2; k++ {
			m := members[(i*7+k*13)%len(members)]
			if m.id == owner.id {
				continue
			}
			if err := call(http.MethodPut, base+"/v1/content/"+c.ID+"/members/"+m.id, owner.token, `{"role":"viewer"}`, http.StatusCreated, nil); err != nil {
				return err
			}
		}
		if i%10 == 0 && groups[0] != "" {
			g := groups[i/10%len(groups)]
			if err := call(http.MethodPut, base+"/v1/content/"+c.ID+"/members/"+g, owner.token, `{"role":"viewer"}`, http.StatusCreated, nil); err != nil && !strings.Contains(err.Error(), ": 403") {
				return err
			}
		}
		if i%3 == 0 {
			return call(http.MethodPatch, base+"/v1/content/"+c.ID, owner.token, fmt.Sprintf(`{"name":%q}`, words(30)), http.StatusOK, nil)
		}
		return nil
	})
}

// nodeDataDir is the local node's data directory (where its keyspaces'
// SSTables are).
func nodeDataDir() (string, error) {
	if os.Getenv(testkit.HostsEnv) != "" {
		return "", fmt.Errorf("make capacity reads SSTable sizes on the local node's disk; unset %s", testkit.HostsEnv)
	}
	l, err := testkit.Launcher()
	if err != nil {
		return "", err
	}
	return filepath.Join(l.DataDir, localcassandra.SingleNode().Name, "data", "data"), nil
}

// tableSize is what TestCapacity measured of one table.
type tableSize struct {
	Table             string
	Rows, Partitions  int
	MaxRowsPartition  int
	PlainBytes        int64 // Data.db of the uncompressed copy
	DiskBytes         int64 // every SSTable file of the LZ4 copy
	PartitionKeyNames []string
}

type tableSizes []tableSize

func (ts tableSizes) table(out *strings.Builder) {
	out.WriteString("| table | rows | partitions | rows/partition mean (max) | bytes/row uncompressed | bytes/row on disk (LZ4, all files) |\n|---|---:|---:|---:|---:|---:|\n")
	for _, s := range ts {
		if s.Rows == 0 {
			fmt.Fprintf(out, "| %s | 0 | 0 | - | - | - |\n", s.Table)
			continue
		}
		fmt.Fprintf(out, "| %s | %d | %d | %.1f (%d) | %.0f | %.0f |\n", s.Table, s.Rows, s.Partitions,
			float64(s.Rows)/float64(s.Partitions), s.MaxRowsPartition,
			float64(s.PlainBytes)/float64(s.Rows), float64(s.DiskBytes)/float64(s.Rows))
	}
}

// measureTables copies every table of src into plain (compression off)
// and packed (the default LZ4) once, has both flushed, and reads their
// SSTables' sizes under dataDir.
func measureTables(src, plain, packed *testkit.DB, dataDir string) (tableSizes, error) {
	s := src.Session.Session
	var names []string
	iter := s.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, src.Keyspace()).Iter()
	for name := ""; iter.Scan(&name); {
		if name != "gocqlx_migrate" {
			names = append(names, name)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := s.Query(fmt.Sprintf(`ALTER TABLE %s.%s WITH compression = {'enabled': 'false'} AND memtable_flush_period_in_ms = 2000`, plain.Keyspace(), name)).Exec(); err != nil {
			return nil, err
		}
		if err := s.Query(fmt.Sprintf(`ALTER TABLE %s.%s WITH memtable_flush_period_in_ms = 2000`, packed.Keyspace(), name)).Exec(); err != nil {
			return nil, err
		}
	}
	var sizes tableSizes
	for _, name := range names {
		ts, err := copyTable(s, src.Keyspace(), name, plain.Keyspace(), packed.Keyspace())
		if err != nil {
			return nil, err
		}
		sizes = append(sizes, ts)
	}
	// The memtables flush every two seconds; wait until the sizes on disk
	// hold still for three looks in a row.
	var last []int64
	for stable := 0; stable < 3; {
		time.Sleep(2 * time.Second)
		now := make([]int64, 0, 2*len(sizes))
		for _, ts := range sizes {
			p, _ := sstableBytes(dataDir, plain.Keyspace(), ts.Table, true)
			d, _ := sstableBytes(dataDir, packed.Keyspace(), ts.Table, false)
			now = append(now, p, d)
		}
		if slices.Equal(now, last) && !slices.Contains(rowsWithoutFiles(sizes, now), true) {
			stable++
		} else {
			stable = 0
		}
		last = now
	}
	for i := range sizes {
		sizes[i].PlainBytes, sizes[i].DiskBytes = last[2*i], last[2*i+1]
	}
	return sizes, nil
}

// rowsWithoutFiles says, per table, whether rows were copied but no
// SSTable is on disk yet.
func rowsWithoutFiles(sizes tableSizes, bytes []int64) []bool {
	out := make([]bool, len(sizes))
	for i, ts := range sizes {
		out[i] = ts.Rows > 0 && (bytes[2*i] == 0 || bytes[2*i+1] == 0)
	}
	return out
}

// copyTable copies every row of ks.table into the twins (as JSON, each
// row once) and counts rows and partitions.
func copyTable(s *gocql.Session, ks, table string, twins ...string) (tableSize, error) {
	ts := tableSize{Table: table}
	iter := s.Query(`SELECT column_name, kind, position FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?`, ks, table).Iter()
	var (
		col, kind string
		pos       int
		keys      = map[int]string{}
	)
	for iter.Scan(&col, &kind, &pos) {
		if kind == "partition_key" {
			keys[pos] = col
		}
	}
	if err := iter.Close(); err != nil {
		return ts, err
	}
	for i := range len(keys) {
		ts.PartitionKeyNames = append(ts.PartitionKeyNames, keys[i])
	}
	perPartition := map[string]int{}
	rows := s.Query(fmt.Sprintf(`SELECT JSON * FROM %s.%s`, ks, table)).PageSize(1000).Iter()
	var doc string
	for rows.Scan(&doc) {
		var row map[string]any
		if err := json.Unmarshal([]byte(doc), &row); err != nil {
			return ts, err
		}
		var key strings.Builder
		for _, k := range ts.PartitionKeyNames {
			fmt.Fprintf(&key, "%v\x00", row[k])
		}
		perPartition[key.String()]++
		ts.Rows++
		for _, twin := range twins {
			if err := s.Query(fmt.Sprintf(`INSERT INTO %s.%s JSON ?`, twin, table), doc).Exec(); err != nil {
				return ts, fmt.Errorf("copy %s: %w", table, err)
			}
		}
	}
	if err := rows.Close(); err != nil {
		return ts, err
	}
	ts.Partitions = len(perPartition)
	for _, n := range perPartition {
		ts.MaxRowsPartition = max(ts.MaxRowsPartition, n)
	}
	return ts, nil
}

// sstableBytes sums the SSTables of ks.table on disk: only the Data.db
// components (dataOnly), or every file.
func sstableBytes(dataDir, ks, table string, dataOnly bool) (int64, error) {
	dirs, err := filepath.Glob(filepath.Join(dataDir, ks, table+"-*"))
	if err != nil || len(dirs) == 0 {
		return 0, err
	}
	var total int64
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return 0, err
		}
		for _, e := range entries {
			if e.IsDir() || (dataOnly && !strings.HasSuffix(e.Name(), "-Data.db")) {
				continue
			}
			if info, err := e.Info(); err == nil {
				total += info.Size()
			}
		}
	}
	return total, nil
}

// saveNamed writes text to .bench/name.
func saveNamed(name, text string) error {
	root, err := localcassandra.RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, ".bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Printf("saved .bench/%s\n", name)
	return os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
}

// contention is how one key took compare-and-sets at each number of
// clients contending for it.
type contention []contentionRow

type contentionRow struct {
	Clients                 int
	Applied, Lost, Timeouts int
	Errors                  int
	Seconds                 float64
	P50, P99                time.Duration // of an applied update, read included
}

func (c contention) table(out *strings.Builder) {
	out.WriteString("One content row updated as shelf does (read at LOCAL_SERIAL, then UPDATE ... IF version = read), clients contending for it:\n\n")
	out.WriteString("| clients | applied/s | lost races/s | timeouts | other errors | applied p50 | applied p99 |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range c {
		fmt.Fprintf(out, "| %d | %.0f | %.0f | %d | %d | %s | %s |\n", r.Clients, float64(r.Applied)/r.Seconds, float64(r.Lost)/r.Seconds,
			r.Timeouts, r.Errors, r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond))
	}
}

// measureContention has 1 to 64 clients update one content row's version
// with compare-and-set for round each, as the service's writes do.
func measureContention(s *gocql.Session, round time.Duration) (contention, error) {
	id := fmt.Sprintf("cap-lwt-%d", time.Now().UnixNano())
	if err := s.Query(`INSERT INTO content (id, name, version) VALUES (?, 'x', 1)`, id).Exec(); err != nil {
		return nil, err
	}
	// Warm up (a fresh node compiles its hot paths in the first seconds).
	contend(s, id, 4, round)
	var out contention
	for _, clients := range []int{1, 2, 4, 8, 16, 32, 64, 128} {
		out = append(out, contend(s, id, clients, round))
	}
	return out, nil
}

// contend has clients update row id for round.
func contend(s *gocql.Session, id string, clients int, round time.Duration) contentionRow {
	var (
		mu  sync.Mutex
		row = contentionRow{Clients: clients}
		lat []time.Duration
		wg  sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(round)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			applied, lost, timeouts, errs := 0, 0, 0, 0
			for time.Now().Before(end) {
				t0 := time.Now()
				var version int
				err := s.Query(`SELECT version FROM content WHERE id = ?`, id).Consistency(gocql.Consistency(gocql.LocalSerial)).Scan(&version)
				if err == nil {
					var current int
					var ok bool
					ok, err = s.Query(`UPDATE content SET name = ?, version = ? WHERE id = ? IF version = ?`, words(30), version+1, id, version).ScanCAS(&current)
					if err == nil && ok {
						applied++
						mine = append(mine, time.Since(t0))
						continue
					}
					if err == nil {
						lost++
						continue
					}
				}
				if isTimeout(err) {
					timeouts++
				} else {
					errs++
				}
			}
			mu.Lock()
			row.Applied += applied
			row.Lost += lost
			row.Timeouts += timeouts
			row.Errors += errs
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	row.Seconds = time.Since(start).Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		row.P50, row.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return row
}

// contentionCluster starts three nodes (RF 3) with a content table and
// returns a session on them.
func contentionCluster(t *testing.T) *gocql.Session {
	c := testkit.StartCluster(t, "capacity", [3]string{"127.0.0.41", "127.0.0.42", "127.0.0.43"}, nil)
	s := c.Connect(t, testkit.ConnConfig(c.Hosts(), "capacity"))
	if err := s.ExecStmt(`CREATE TABLE IF NOT EXISTS content (id text PRIMARY KEY, name text, version int)`); err != nil {
		t.Fatal(err)
	}
	return s.Session
}

// isTimeout reports a timeout: of the coordinator (write or read, a CAS
// contention timeout among them) or of the driver.
func isTimeout(err error) bool {
	var wt *gocql.RequestErrWriteTimeout
	var rt *gocql.RequestErrReadTimeout
	return errors.As(err, &wt) || errors.As(err, &rt) || errors.Is(err, gocql.ErrTimeoutNoResponse)
}

// tombstoneCost is what the first page of a list read met after edits
// left row tombstones at its top.
type tombstoneCost []tombstoneRow

type tombstoneRow struct {
	What                string
	Edits               int
	Tombstones          int
	BeforeP50, AfterP50 time.Duration
}

func (c tombstoneCost) table(out *strings.Builder) {
	out.WriteString("First page read (the service's own slice statement, LIMIT 21) after edits that each move or remove a row at the list's top; tombstone cells as Cassandra's trace reports them:\n\n")
	out.WriteString("| list | edits | tombstone cells read | read p50 before | read p50 after |\n|---|---:|---:|---:|---:|\n")
	for _, r := range c {
		fmt.Fprintf(out, "| %s | %d | %d | %s | %s |\n", r.What, r.Edits, r.Tombstones, r.BeforeP50.Round(10*time.Microsecond), r.AfterP50.Round(10*time.Microsecond))
	}
}

// measureTombstones renames one public item edits times (each rename
// moves it to the top of every member library, leaving a row tombstone
// where it was) and suspends and lifts users edits times (each lift erases
// the newest row of the suspended list's current bucket), timing the first
// page's slice read before and after and counting the tombstones it meets.
func measureTombstones(h *harness, edits int) (tombstoneCost, error) {
	base, s := h.api.Base, h.db.Session.Session
	owner, err := signup(base)
	if err != nil {
		return nil, err
	}
	member, err := signup(base)
	if err != nil {
		return nil, err
	}
	admin, err := signup(base)
	if err != nil {
		return nil, err
	}
	if err := makeAdmin(h, admin); err != nil {
		return nil, err
	}
	for range 40 { // live rows below the hot item
		if err := call(http.MethodPost, base+"/v1/content", owner.token, fmt.Sprintf(`{"name":%q,"visibility":"public"}`, words(30)), http.StatusCreated, nil); err != nil {
			return nil, err
		}
	}
	var c struct{ ID string }
	if err := call(http.MethodPost, base+"/v1/content", owner.token, `{"name":"hot","visibility":"public"}`, http.StatusCreated, &c); err != nil {
		return nil, err
	}
	if err := call(http.MethodPut, base+"/v1/content/"+c.ID+"/members/"+member.id, owner.token, `{"role":"viewer"}`, http.StatusCreated, nil); err != nil {
		return nil, err
	}
	libraryPage := s.Query(`SELECT last_modified, content_id, name, visibility, version FROM library_by_principal WHERE principal_id = ? AND bucket = ? LIMIT 21`, owner.id, library.BucketPublic)
	lib := tombstoneRow{What: "library, one item renamed", Edits: edits}
	lib.BeforeP50 = readP50(libraryPage)
	for i := range edits {
		if err := call(http.MethodPatch, base+"/v1/content/"+c.ID, owner.token, fmt.Sprintf(`{"name":"hot %d"}`, i), http.StatusOK, nil); err != nil {
			return nil, err
		}
	}
	lib.AfterP50 = readP50(libraryPage)
	if lib.Tombstones, err = tracedTombstones(s, libraryPage); err != nil {
		return nil, err
	}

	// Users to suspend and lift, 16 at once, edits times in all.
	users := make([]account, 16)
	for i := range users {
		if users[i], err = signup(base); err != nil {
			return nil, err
		}
	}
	bucket := moderation.BucketOf(time.Now(), moderation.BucketMonth)
	listPage := s.Query(`SELECT bucket, occurred_on, user_id, username, reason, actor, until FROM users_by_status WHERE bucket = ? AND status = 'suspended' LIMIT 21`, bucket)
	list := tombstoneRow{What: "suspended list (month bucket), suspensions lifted", Edits: edits}
	list.BeforeP50 = readP50(listPage)
	if err := parallel(len(users), func(k int) error {
		u := users[k]
		for j := k; j < edits; j += len(users) {
			if err := call(http.MethodPost, base+"/v1/users/"+u.id+"/suspension", admin.token, `{"reason":"capacity"}`, http.StatusCreated, nil); err != nil {
				return err
			}
			if err := call(http.MethodDelete, base+"/v1/users/"+u.id+"/suspension", admin.token, "", http.StatusNoContent, nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	list.AfterP50 = readP50(listPage)
	if list.Tombstones, err = tracedTombstones(s, listPage); err != nil {
		return nil, err
	}
	return tombstoneCost{lib, list}, nil
}

// readP50 runs q 200 times and returns its median time.
func readP50(q *gocql.Query) time.Duration {
	lat := make([]time.Duration, 0, 200)
	for range 200 {
		t0 := time.Now()
		if err := q.Iter().Close(); err == nil {
			lat = append(lat, time.Since(t0))
		}
	}
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[len(lat)/2]
}

// tombstoneLine is Cassandra's trace line of a partition read.
var tombstoneLine = regexp.MustCompile(`Read (\d+) live rows and (\d+) tombstone cells`)

// tracedTombstones runs q once traced and returns the tombstone cells
// Cassandra's trace says it read.
func tracedTombstones(s *gocql.Session, q *gocql.Query) (int, error) {
	var tr sessionTrace
	if err := q.Trace(&tr).Iter().Close(); err != nil {
		return 0, err
	}
	q.Trace(nil)
	// Trace events are written asynchronously: look until they are there.
	for range 50 {
		iter := s.Query(`SELECT activity FROM system_traces.events WHERE session_id = ?`, tr.id).Consistency(gocql.One).Iter()
		var activity string
		found, n := false, 0
		for iter.Scan(&activity) {
			if m := tombstoneLine.FindStringSubmatch(activity); m != nil {
				k, _ := strconv.Atoi(m[2])
				n, found = n+k, true
			}
		}
		if err := iter.Close(); err != nil {
			return 0, err
		}
		if found {
			return n, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, errors.New("the trace of the page read never showed its partition read")
}

// sessionTrace keeps the trace session id of a traced statement.
type sessionTrace struct{ id []byte }

func (t *sessionTrace) Trace(id []byte) { t.id = slices.Clone(id) }
