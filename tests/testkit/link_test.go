package testkit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// TestLinkRelaysInOrderAfterItsDelay: what goes through a link comes out
// whole and in order, both ways, at once or after the delay set (a round
// trip through a link of delay d takes at least 2d: a lower bound only,
// which no load on the machine can break).
func TestLinkRelaysInOrderAfterItsDelay(t *testing.T) {
	t.Parallel()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	link, err := NewLink("127.0.0.1:0", echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	c, err := net.Dial("tcp", link.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrips := func(n int) time.Duration {
		t.Helper()
		started := time.Now()
		// Every line is written before any is read: many chunks in flight.
		for i := range n {
			if _, err := fmt.Fprintf(c, "line %d\n", i); err != nil {
				t.Fatal(err)
			}
		}
		for i := range n {
			line, err := r.ReadString('\n')
			if err != nil || line != fmt.Sprintf("line %d\n", i) {
				t.Fatalf("read %q (%v), want line %d", line, err, i)
			}
		}
		return time.Since(started)
	}
	roundTrips(100)
	const delay = 40 * time.Millisecond
	link.SetDelay(delay)
	if took := roundTrips(100); took < 2*delay {
		t.Fatalf("100 lines came back after %v through a link of %v each way", took, delay)
	}
	link.SetDelay(0)
	roundTrips(100)
}
