package testkit

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Link relays TCP from an address of its own to a target, each chunk
// after a delay the test changes while it runs: the link between two data
// centres, slowed down. A Cassandra node whose broadcast_address is the
// link's address is reached through it by the other nodes (their writes,
// reads and Paxos rounds), while clients reach it directly. Chunks keep
// their order and a connection is not throttled: each waits the delay from
// when it was read, so a chatty connection pays the delay once per trip,
// not once per chunk queued behind another. (Kernel delay, tc netem, is
// not built into every kernel this runs on.)
type Link struct {
	target string
	ln     net.Listener
	delay  atomic.Int64 // nanoseconds

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// queued is a chunk read and the earliest time it may be written.
type queued struct {
	data []byte
	at   time.Time
}

// NewLink listens on addr and relays every connection to target.
func NewLink(addr, target string) (*Link, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &Link{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go l.relay(c)
		}
	}()
	return l, nil
}

// Addr is where the link listens.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// SetDelay makes every chunk read from now on wait d (one way) before it
// is passed on; 0 passes at once.
func (l *Link) SetDelay(d time.Duration) { l.delay.Store(int64(d)) }

// Close stops listening and closes every connection.
func (l *Link) Close() error {
	err := l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		_ = c.Close()
	}
	return err
}

func (l *Link) relay(client net.Conn) {
	server, err := net.Dial("tcp", l.target)
	if err != nil {
		_ = client.Close()
		return
	}
	l.mu.Lock()
	l.conns[client], l.conns[server] = struct{}{}, struct{}{}
	l.mu.Unlock()
	joinBoth(client, server, l.pass)
	l.mu.Lock()
	delete(l.conns, client)
	delete(l.conns, server)
	l.mu.Unlock()
}

// pass copies src to dst, each chunk no sooner than the delay after it was
// read: one goroutine reads and stamps, another waits and writes.
func (l *Link) pass(dst io.Writer, src io.Reader, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	chunks := make(chan queued, 256)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- queued{buf[:n], time.Now().Add(time.Duration(l.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		if wait := time.Until(c.at); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.data); err != nil {
			// The reader ends once the relay closes both connections,
			// which it does when this returns.
			go func() {
				for range chunks {
				}
			}()
			return
		}
	}
}
