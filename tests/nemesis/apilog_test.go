package nemesis

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

// apiNote is one line of an API process's log that explains a wait: a
// statement attempt slower than SHELF_CASSANDRA_SLOW_LOG, or the driver's
// word about a connection. A second without answers is explained by the
// notes whose span overlaps it, so a failed availability verdict in CI says
// which node and which statements the requests waited on.
type apiNote struct {
	API        int
	Start, End time.Time
	Text       string
}

// readNotes reads the slow statements and the driver's warnings of one API
// process's JSON log.
func readNotes(api int, r io.Reader) []apiNote {
	var notes []apiNote
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		var line struct {
			Level, Component, Message, Time, Kind, Node, Error, Statement string
			DurationMs                                                    float64
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Level != "warn" {
			continue
		}
		end, err := time.Parse(time.RFC3339Nano, line.Time)
		if err != nil {
			continue
		}
		switch {
		case line.Message == "slow statement":
			text := fmt.Sprintf("%s on %s %.0f ms", line.Kind, line.Node, line.DurationMs)
			if line.Error != "" {
				text += ": " + shortenNote(line.Error, 60)
			}
			text += " (" + shortenNote(line.Statement, 40) + ")"
			notes = append(notes, apiNote{API: api, Start: end.Add(-time.Duration(line.DurationMs * float64(time.Millisecond))), End: end, Text: text})
		case line.Component == "gocql":
			notes = append(notes, apiNote{API: api, Start: end, End: end, Text: "driver: " + shortenNote(strings.TrimSpace(line.Message), 80)})
		}
	}
	return notes
}

// explain lists the notes overlapping [a, b), at most five, the longest
// waits first.
func explain(notes []apiNote, a, b time.Time) string {
	var hit []apiNote
	for _, n := range notes {
		if n.Start.Before(b) && !n.End.Before(a) {
			hit = append(hit, n)
		}
	}
	if len(hit) == 0 {
		return "the API processes logged no slow statement and nothing from the driver then"
	}
	slices.SortStableFunc(hit, func(x, y apiNote) int { return cmp.Compare(y.End.Sub(y.Start), x.End.Sub(x.Start)) })
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
