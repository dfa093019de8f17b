package app

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"shelf/internal/config"
)

// TestANodeThatDoesNotAnswerIsWaitedForAloud: start-up waits up to
// SHELF_CASSANDRA_CONNECT_WAIT (a minute) for a node still starting. It says
// so at the first refusal, not after the minute, and when the wait ends
// the error says what to do next: see whether the node runs, start the
// local one, or name another.
func TestANodeThatDoesNotAnswerIsWaitedForAloud(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{
			"SHELF_CASSANDRA_HOSTS":        "127.0.0.9", // loopback, nothing listening: refused at once
			"SHELF_CASSANDRA_CONNECT_WAIT": "1500ms",
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, connect := range map[string]func(logger zerolog.Logger) error{
		"Connect": func(logger zerolog.Logger) error {
			_, err := Connect(context.Background(), cfg, logger, false, nil)
			return err
		},
		"serve's and api admin's connectChecked": func(logger zerolog.Logger) error {
			_, _, err := connectChecked(context.Background(), cfg, logger, true, nil, checkedSerial)
			return err
		},
	} {
		var log bytes.Buffer
		err := connect(zerolog.New(&log))
		if err == nil {
			t.Fatalf("%s: connected to a node that is not there", name)
		}
		for _, want := range []string{"SHELF_CASSANDRA_HOSTS", "make cassandra-status", "make cassandra-up"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error does not name %q: %v", name, want, err)
			}
		}
		if n := strings.Count(log.String(), "SHELF_CASSANDRA_CONNECT_WAIT"); n != 1 {
			t.Errorf("%s: the wait was said %d times, want once:\n%s", name, n, log.String())
		}
	}
}
