// Package logbuf batches the log's writes: lines gather in a buffer that
// goes out every interval, when it fills up, and at once after a line at
// warn level or above. Under load the access log is one line per request;
// written one by one, each line is a system call (3% of the API's CPU on a
// one-read request, docs/decisions/0066-serve-batches-the-log-s-info-lines.md)
// and a wake-up of whatever reads the log. The price is
// that a process killed outright (SIGKILL, a crash in the runtime) loses
// the info lines of its last interval; warnings, errors and a recovered
// panic's line are out before the call that logged them returns, and Close
// writes the rest on a normal shutdown.
package logbuf

import (
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// size is how much the buffer holds before it is written out at once.
const size = 64 << 10

// Writer is a zerolog.LevelWriter that batches writes to out. Safe for
// concurrent use; lines keep their order and are never split.
type Writer struct {
	out io.Writer
	mu  sync.Mutex
	buf []byte
	// closed: Close has run; writes go straight out.
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

var _ zerolog.LevelWriter = (*Writer)(nil)

// New starts a Writer that writes out what it holds every interval. Close
// it to write the rest and stop its timer.
func New(out io.Writer, interval time.Duration) *Writer {
	w := &Writer{out: out, buf: make([]byte, 0, size), stop: make(chan struct{}), done: make(chan struct{})}
	go w.flushEvery(interval)
	return w
}

func (w *Writer) flushEvery(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = w.Flush()
		case <-w.stop:
			return
		}
	}
}

// Write adds p (one whole line, as zerolog writes them) to the buffer,
// writing the buffer out first when p would not fit.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.out.Write(p)
	}
	if len(w.buf)+len(p) > cap(w.buf) {
		if err := w.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > cap(w.buf) {
			return w.out.Write(p)
		}
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// WriteLevel is Write, then a flush for warnings and worse: those are read
// when something goes wrong, and must not wait or be lost.
func (w *Writer) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	n, err := w.Write(p)
	if err != nil || level < zerolog.WarnLevel || level == zerolog.NoLevel {
		return n, err
	}
	return n, w.Flush()
}

// Flush writes out what the buffer holds.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.out.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// Close stops the timer and writes out the rest. The Writer still takes
// writes afterwards, writing each at once (a late line is not lost).
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	close(w.stop)
	err := w.flushLocked()
	w.mu.Unlock()
	<-w.done
	return err
}
