package app

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/internal/config"
)

// TestAPortTakenSaysWhatToDo: the API's port held by another process (an
// earlier make run) is refused with what to do next: stop that process,
// or serve on the next port, with the public URL to match so that mailed
// links come back to this server.
func TestAPortTakenSaysWhatToDo(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln, err := listenHTTP(addr)
	if err == nil {
		ln.Close()
		t.Fatalf("listenHTTP(%s) took a port already held", addr)
	}
	msg := err.Error()
	for _, want := range []string{"SHELF_HTTP_ADDR", "another process", "SHELF_PUBLIC_URL=http://localhost:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q, want it to say %q", msg, want)
		}
	}
	if strings.Contains(msg, "SHELF_HTTP_ADDR=127.0.0.1:"+port+" ") {
		t.Errorf("error %q suggests the port taken", msg)
	}
}

// TestTheNextAddressOfAPortTaken: the address suggested is the next port
// on the same host, and the public URL the matching localhost one where
// the host is this machine.
func TestTheNextAddressOfAPortTaken(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		":8080":          "SHELF_HTTP_ADDR=:8081 SHELF_PUBLIC_URL=http://localhost:8081",
		"127.0.0.1:9000": "SHELF_HTTP_ADDR=127.0.0.1:9001 SHELF_PUBLIC_URL=http://localhost:9001",
		"10.0.0.5:8080":  "SHELF_HTTP_ADDR=10.0.0.5:8081 (and SHELF_PUBLIC_URL to match)",
	} {
		if got := elsewhere(addr); got != want {
			t.Errorf("elsewhere(%q) = %q, want %q", addr, got, want)
		}
	}
}

// TestServeSaysAPortTakenBeforeItConnects: with the port held, Serve
// answers the port's error at once, before it waits for a node (which
// may take a minute while one starts): here none answers at all, and
// the wait would be SHELF_CASSANDRA_CONNECT_WAIT's.
func TestServeSaysAPortTakenBeforeItConnects(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{
			"SHELF_HTTP_ADDR":              held.Addr().String(),
			"SHELF_CASSANDRA_HOSTS":        "127.0.0.9", // nothing listening
			"SHELF_CASSANDRA_CONNECT_WAIT": "1m",
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = Serve(ctx, cfg, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("Serve with its port held: %v, want the port's error before any wait for a node", err)
	}
}
