//go:build integration

package testkit

import (
	"net"
	"strings"
	"testing"
)

// TestMailpitStartsAgainWhenItsPortIsTaken: a mailpit whose port another
// process took between choosing and binding exits; startMailpit says so
// at once (not after its 30 s wait), and StartMailpit, choosing new ports
// for each attempt, still gives a mailpit that answers.
func TestMailpitStartsAgainWhenItsPortIsTaken(t *testing.T) {
	bin, err := mailpitBin()
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	smtpPort, _ := freePorts(t)
	_, err = startMailpit(t, bin, smtpPort, taken.Addr().(*net.TCPAddr).Port)
	if err == nil || !strings.Contains(err.Error(), "exited before answering") {
		t.Fatalf("a mailpit on a taken port: %v, want it to have exited before answering", err)
	}
	m := StartMailpit(t)
	if got := m.Messages(t, "nobody@example.org"); len(got) != 0 {
		t.Fatalf("a new mailpit holds %d messages", len(got))
	}
}
