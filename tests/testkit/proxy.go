package testkit

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/gocql/gocql"
)

// Proxy stands between a test's driver and the shared node, so the test can
// take "the node" away from that driver alone: Kill closes every
// connection and refuses new ones (what a driver sees when a node's
// process dies), Hang keeps the connections open and passes nothing (a
// node stopped with SIGSTOP), Heal lets everything through again. Other
// tests on the node notice nothing, and no node of the test's own has to
// start (two JVM starts on a two-core machine are most of a minute).
type Proxy struct {
	target string
	addr   string

	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]struct{}
	hung    bool
	resumed chan struct{} // closed on Heal; what hung copies wait on
	closed  bool          // the test ended: Heal listens no more
}

// NewProxy forwards a port of its own on 127.0.0.1 to target (host:port)
// until the test ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}, resumed: make(chan struct{})}
	p.serve(ln)
	tb.Cleanup(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.Kill()
		p.Heal() // releases the copies a hang holds
	})
	return p
}

// Addr is the proxy's address, the contact point a test connects to.
func (p *Proxy) Addr() string { return p.addr }

// Translator sends the driver to the proxy whatever address the node gives
// for itself in system.local (there is one node behind it).
func (p *Proxy) Translator() gocql.AddressTranslator {
	host, port, _ := net.SplitHostPort(p.addr)
	n, _ := strconv.Atoi(port)
	return gocql.AddressTranslatorFunc(func(net.IP, int) (net.IP, int) { return net.ParseIP(host), n })
}

// Kill closes every connection through the proxy and refuses new ones.
func (p *Proxy) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// Hang stops passing bytes either way on every connection, open or new.
func (p *Proxy) Hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.hung {
		p.hung = true
		p.resumed = make(chan struct{})
	}
}

// Heal passes bytes again and, after Kill, listens again on the same port.
func (p *Proxy) Heal() {
	p.mu.Lock()
	if p.hung {
		p.hung = false
		close(p.resumed)
	}
	dead := p.ln == nil && !p.closed
	p.mu.Unlock()
	if dead {
		// Go listens with SO_REUSEADDR: the port is free again at once.
		if ln, err := net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
		}
	}
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *Proxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	joinBoth(client, server, p.copy)
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// joinBoth copies each way with pass until one way ends, then closes both
// ends and waits for the other way (the Proxy's and the Link's relays).
func joinBoth(client, server net.Conn, pass func(dst io.Writer, src io.Reader, done chan<- struct{})) {
	done := make(chan struct{}, 2)
	go pass(server, client, done)
	go pass(client, server, done)
	<-done
	_ = client.Close()
	_ = server.Close()
	<-done
}

// track records both ends, or closes them when the proxy was killed while
// the connection was being made.
func (p *Proxy) track(client, server net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_ = client.Close()
		_ = server.Close()
		return false
	}
	p.conns[client] = struct{}{}
	p.conns[server] = struct{}{}
	return true
}

// copy passes src to dst a read at a time, holding each read while the
// proxy hangs.
func (p *Proxy) copy(dst io.Writer, src io.Reader, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		hung, resumed := p.hung, p.resumed
		p.mu.Unlock()
		if hung {
			<-resumed
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
