// Command dropkeyspace drops the keyspace a screenshot run (docs/console.md's pictures) of make
// test-browser made for itself (scripts/test-browser.sh): such a run
// starts from an empty keyspace, so that its fixed names (alice, bob ...)
// never collide with an earlier run's, and leaves nothing behind.
//
//	go run ./tests/browser/dropkeyspace <keyspace>
//
// It drops only keyspaces named shelf_browser_*, on SHELF_CASSANDRA_HOSTS
// (127.0.0.1 when unset).
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"shelf/repository"
)

func main() {
	if err := run(os.Args[1:], os.Getenv("SHELF_CASSANDRA_HOSTS")); err != nil {
		fmt.Fprintln(os.Stderr, "dropkeyspace:", err)
		os.Exit(1)
	}
}

func run(args []string, hosts string) error {
	if len(args) != 1 || !strings.HasPrefix(args[0], "shelf_browser_") {
		return fmt.Errorf("usage: dropkeyspace shelf_browser_<name> (got %q)", args)
	}
	if hosts == "" {
		hosts = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return repository.DropKeyspace(ctx, repository.ConnConfig{
		Hosts:             strings.Split(hosts, ","),
		Keyspace:          args[0],
		Consistency:       "LOCAL_QUORUM",
		SerialConsistency: "LOCAL_SERIAL",
		Timeout:           30 * time.Second,
		ConnectTimeout:    5 * time.Second,
		ReconnectInterval: time.Second,
	})
}
