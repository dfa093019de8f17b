package testkit

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// APINote is one line of an API process's log that explains a wait: a
// statement attempt slower than SHELF_CASSANDRA_SLOW_LOG, or the driver's
// word about a connection. A second without answers is explained by the
// notes whose span overlaps it, so a run that saw one says which node and
// which statements the requests waited on (the nemesis, bench-degraded).
type APINote struct {
	API        int
	Start, End time.Time
	Text       string
}

// ReadAPINotes reads the slow statements and the driver's warnings of one
// API process's JSON log.
func ReadAPINotes(api int, r io.Reader) []APINote {
	var notes []APINote
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if n, ok := ParseAPINote(api, sc.Bytes()); ok {
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

// ExplainWait lists the notes overlapping [a, b), at most five, the
// longest waits first.
func ExplainWait(notes []APINote, a, b time.Time) string {
	var hit []APINote
	for _, n := range notes {
		if n.Start.Before(b) && !n.End.Before(a) {
			hit = append(hit, n)
		}
	}
	if len(hit) == 0 {
		return "the API processes logged no slow statement and nothing from the driver then"
	}
	slices.SortStableFunc(hit, func(x, y APINote) int { return cmp.Compare(y.End.Sub(y.Start), x.End.Sub(x.Start)) })
	shown := hit[:min(len(hit), 5)]
	parts := make([]string, len(shown))
	for i, n := range shown {
		parts[i] = fmt.Sprintf("api %d %s", n.API, n.Text)
	}
	more := ""
	if len(hit) > len(shown) {
		more = fmt.Sprintf("; %d more", len(hit)-len(shown))
	}
	return fmt.Sprintf("the API processes logged %d: %s%s", len(hit), strings.Join(parts, "; "), more)
}

func shortenNote(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
