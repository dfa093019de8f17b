package app

import (
	"context"
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
