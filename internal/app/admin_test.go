package app

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"shelf/internal/config"
)

// Each command line reaches its own command with what it was given, and
// anything else is the usage before a connection is tried.
func TestAdminCommandsParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // the command run; "" for the usage
	}{
		{[]string{"grant", "alice"}, "grant"},
		{[]string{"revoke", "alice@example.com"}, "revoke"},
		{[]string{"repair-suspensions"}, "repair-suspensions"},
		{[]string{"repair-suspensions", "--dry-run", "--from", "lookups:-4611686018427387904"}, "repair-suspensions"},
		{[]string{"repair-suspensions", "--from", "-4611686018427387904"}, "repair-suspensions"},
		{[]string{"repair-deletions", "--dry-run"}, "repair-deletions"},
		{[]string{"repair-closings"}, "repair-closings"},
		{[]string{"repair-closings", "--dry-run"}, "repair-closings"},
		{[]string{"index-users", "--dry-run"}, "index-users"},
		{nil, ""},
		{[]string{"grant"}, ""},
		{[]string{"grant", "a", "b"}, ""},
		{[]string{"revoke", "--dry-run", "alice"}, ""},
		{[]string{"repair-deletions", "--from", "x"}, ""},
		{[]string{"repair-closings", "now"}, ""},
		{[]string{"repair-suspensions", "--from"}, ""},
		{[]string{"index-users", "--force"}, ""},
		{[]string{"drop-everything"}, ""},
	} {
		name, run, _, err := parseAdmin(tc.args)
		if tc.want == "" {
			if err == nil || !strings.HasPrefix(err.Error(), "usage: api admin") {
				t.Errorf("%q: %v, want the usage", tc.args, err)
			}
			continue
		}
		if err != nil || run == nil || name != tc.want {
			t.Errorf("%q: ran %q (%v), want %q", tc.args, name, err, tc.want)
		}
	}
}

// The usage names every command of the table, and a wrong command line
// answers it without a node to connect to.
func TestAdminUsageListsEveryCommand(t *testing.T) {
	t.Parallel()
	err := Admin(context.Background(), config.Config{}, zerolog.Nop(), []string{"repair-deletions", "--now"}, nil)
	if err == nil {
		t.Fatal("a wrong command line ran")
	}
	for _, c := range adminCommands {
		if !strings.Contains(err.Error(), "\n  "+c.name+" ") {
			t.Errorf("the usage lacks %s:\n%s", c.name, err)
		}
	}
}

// TestServeAndMigrateRefuseArguments: `api migrate --dry-run`, what an
// operator who knows the admin commands' --dry-run types to see what
// migrate would do, applied every pending migration (serve and migrate
// read nothing after their name, so any argument was dropped, a typo
// alike). Each now answers the usage, before any node is reached.
func TestServeAndMigrateRefuseArguments(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a connection, if one is tried, ends at once
	env := map[string]string{"SHELF_CASSANDRA_HOSTS": "127.0.0.1:1", "SHELF_CASSANDRA_CONNECT_WAIT": "1ms", "SHELF_CASSANDRA_CONNECT_TIMEOUT": "10ms"}
	for _, args := range [][]string{{"migrate", "--dry-run"}, {"migrate", "now"}, {"serve", "--port", "9000"}} {
		err := Run(ctx, args, func(k string) string { return env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]+" takes no arguments") || !strings.Contains(err.Error(), "usage: api <command>") {
			t.Errorf("%q: %v, want the usage", args, err)
		}
	}
}
