package app

import (
	"net"
	"strings"
	"testing"
)

// TestLinksToAnotherPortOfThisMachineAreToldAtStart: make run elsewhere
// than :8080 (SHELF_HTTP_ADDR=:8081) with SHELF_PUBLIC_URL left at its
// default mails links to http://localhost:8080, another server or none,
// where a token is refused or lost. Start-up says so and what to set; a
// public URL on another machine (behind a proxy) or on the port served is
// left alone.
func TestLinksToAnotherPortOfThisMachineAreToldAtStart(t *testing.T) {
	t.Parallel()
	tcp := func(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }
	for _, tc := range []struct {
		public string
		addr   net.Addr
		want   string
	}{
		{"http://localhost:8080", tcp("::", 8081), "SHELF_PUBLIC_URL=http://localhost:8081"},
		{"http://127.0.0.1:8080", tcp("127.0.0.1", 9000), "SHELF_PUBLIC_URL=http://127.0.0.1:9000"},
		{"http://localhost:8080", tcp("::", 8080), ""},
		{"http://localhost:8080/", tcp("0.0.0.0", 8080), ""},
		{"https://shelf.example.org", tcp("::", 8081), ""},
		{"http://localhost", tcp("::", 80), ""},
	} {
		got := linksElsewhere(tc.public, tc.addr)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("SHELF_PUBLIC_URL %s, serving %s: %q, want %q", tc.public, tc.addr, got, tc.want)
		}
	}
}
