package testkit

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// APINote is one line of an API process's log that explains a wait: a
// statement attempt slower than SHELF_CASSANDRA_SLOW_LOG, or the driver's
// word about a connection; or one of a node's (ReadNodeNotes): a warning,
// a pause, a peer down or up. A second without answers is explained by the
// notes whose span overlaps it, so a run that saw one says which node and
// which statements the requests waited on (the nemesis, bench-degraded).
type APINote struct {
	API        int
	Start, End time.Time
	Text       string
	// Node is the node whose log said it (ReadNodeNotes), 0 for an API
	// process's line.
	Node int
}

// weight ranks the moments a wait may be explained by: a node's pause
// or its word that a peer went down or came up first, the rest after.
func (n APINote) weight() int {
	for _, w := range []string{"pause", "GC in", "is now DOWN", "is now UP"} {
		if strings.Contains(n.Text, w) {
			return 1
		}
	}
	return 0
}

func (n APINote) from() string {
	if n.Node > 0 {
		return fmt.Sprintf("node %d", n.Node)
	}
	return fmt.Sprintf("api %d", n.API)
}

// ReadAPINotes reads the slow statements and the driver's warnings of one
// API process's JSON log.
func ReadAPINotes(api int, r io.Reader) []APINote {
	return readNotes(r, func(line []byte) (APINote, bool) { return ParseAPINote(api, line) })
}

// readNotes is every line of r that parse takes for a note.
func readNotes(r io.Reader, parse func(line []byte) (APINote, bool)) []APINote {
	var notes []APINote
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if n, ok := parse(sc.Bytes()); ok {
			notes = append(notes, n)
		}
	}
	return notes
}

// ParseAPINote reads one log line; ok is false for a line that explains
// no wait.
func ParseAPINote(api int, line []byte) (_ APINote, ok bool) {
	var l struct {
		Level, Component, Message, Time, Kind, Node, Error, Statement string
		DurationMs                                                    float64
	}
	if json.Unmarshal(line, &l) != nil || l.Level != "warn" {
		return APINote{}, false
	}
	end, err := time.Parse(time.RFC3339Nano, l.Time)
	if err != nil {
		return APINote{}, false
	}
	switch {
	case l.Message == "slow statement":
		text := fmt.Sprintf("%s on %s %.0f ms", l.Kind, l.Node, l.DurationMs)
		if l.Error != "" {
			text += ": " + shortenNote(l.Error, 60)
		}
		text += " (" + shortenNote(l.Statement, 40) + ")"
		return APINote{API: api, Start: end.Add(-time.Duration(l.DurationMs * float64(time.Millisecond))), End: end, Text: text}, true
	case l.Component == "gocql":
		return APINote{API: api, Start: end, End: end, Text: "driver: " + shortenNote(strings.TrimSpace(l.Message), 80)}, true
	}
	return APINote{}, false
}

// ExplainWait lists the notes overlapping [a, b): the four longest waits,
// then three moments (a driver's or a node's word), pauses and peers
// marked down or up first.
func ExplainWait(notes []APINote, a, b time.Time) string {
	var spans, points []APINote
	for _, n := range notes {
		if !n.Start.Before(b) || n.End.Before(a) {
			continue
		}
		if n.End.After(n.Start) {
			spans = append(spans, n)
		} else {
			points = append(points, n)
		}
	}
	if len(spans)+len(points) == 0 {
		return "the API processes logged no slow statement and nothing from the driver then, the nodes no warning"
	}
	slices.SortStableFunc(spans, func(x, y APINote) int { return cmp.Compare(y.End.Sub(y.Start), x.End.Sub(x.Start)) })
	slices.SortStableFunc(points, func(x, y APINote) int { return cmp.Compare(y.weight(), x.weight()) })
	// The longest waits, and a few of the moments (a driver's or a node's
	// word), so that a node's pause is not hidden behind the waits it caused.
	shown := slices.Concat(spans[:min(len(spans), 4)], points[:min(len(points), 3)])
	parts := make([]string, len(shown))
	for i, n := range shown {
		parts[i] = n.from() + " " + n.Text
	}
	more := ""
	if hit := len(spans) + len(points); hit > len(shown) {
		more = fmt.Sprintf("; %d more", hit-len(shown))
	}
	return fmt.Sprintf("the logs said %d: %s%s", len(spans)+len(points), strings.Join(parts, "; "), more)
}

// ReadNodeNotes reads the lines of a Cassandra node's system.log (node is
// its number, from 1) that can explain a wait: warnings and errors (a
// dropped message, a slow query, a long pause), the collector's pauses
// and the failure detector's word that a peer is down or up. The log's
// times are the machine's local time.
func ReadNodeNotes(node int, r io.Reader) []APINote {
	return readNotes(r, func(line []byte) (APINote, bool) { return parseNodeNote(node, string(line)) })
}

// nodeLine is a system.log line: its level, thread, time, source and
// message ("WARN  [thread] 2026-12-05 05:21:44,370 File.java:107 - text").
var nodeLine = regexp.MustCompile(`^(\w+)\s+\[([^\]]*)\] (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\S+) - (.*)$`)

// gcPause is the collector's word on a pause, with its length.
var gcPause = regexp.MustCompile(`GC in (\d+)ms`)

func parseNodeNote(node int, line string) (_ APINote, ok bool) {
	m := nodeLine.FindStringSubmatch(line)
	if m == nil {
		return APINote{}, false
	}
	at, err := time.ParseInLocation("2006-01-02 15:04:05,000", m[3], time.Local)
	if err != nil {
		return APINote{}, false
	}
	level, thread, source, text := m[1], m[2], m[4], m[5]
	if thread == "main" || strings.HasPrefix(source, "CassandraRoleManager") {
		return APINote{}, false // a starting node's checks and its role setup: not a wait
	}
	n := APINote{Node: node, Start: at, End: at, Text: shortenNote(text, 100)}
	switch {
	case strings.HasPrefix(source, "GCInspector"):
		if g := gcPause.FindStringSubmatch(text); g != nil {
			ms, _ := strconv.Atoi(g[1])
			n.Start = at.Add(-time.Duration(ms) * time.Millisecond)
		}
		return n, true
	case level == "WARN" || level == "ERROR",
		strings.Contains(text, "is now DOWN"), strings.Contains(text, "is now UP"):
		return n, true
	}
	return APINote{}, false
}

func shortenNote(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
