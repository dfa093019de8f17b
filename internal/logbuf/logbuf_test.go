package logbuf

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// sink records every write it is given, each as one chunk.
type sink struct {
	mu     sync.Mutex
	chunks []string
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks = append(s.chunks, string(p))
	return len(p), nil
}

func (s *sink) snapshot() (chunks []string, all string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.chunks...), strings.Join(s.chunks, "")
}

const never = time.Hour

func TestInfoLinesWaitAndGoOutTogether(t *testing.T) {
	out := &sink{}
	w := New(out, never)
	defer w.Close()
	log := zerolog.New(w)
	for i := range 100 {
		log.Info().Int("n", i).Msg("request")
	}
	if chunks, _ := out.snapshot(); len(chunks) != 0 {
		t.Fatalf("%d writes before any flush; info lines should wait", len(chunks))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	chunks, all := out.snapshot()
	if len(chunks) != 1 {
		t.Fatalf("%d writes for one flush, want 1", len(chunks))
	}
	lines := strings.Split(strings.TrimSuffix(all, "\n"), "\n")
	if len(lines) != 100 {
		t.Fatalf("%d lines out, want 100", len(lines))
	}
	for i, l := range lines {
		if want := fmt.Sprintf(`{"level":"info","n":%d,"message":"request"}`, i); l != want {
			t.Fatalf("line %d = %s, want %s", i, l, want)
		}
	}
}

func TestWarningsGoOutBeforeTheCallReturns(t *testing.T) {
	for _, level := range []zerolog.Level{zerolog.WarnLevel, zerolog.ErrorLevel} {
		out := &sink{}
		w := New(out, never)
		log := zerolog.New(w)
		log.Info().Msg("before")
		log.WithLevel(level).Msg("trouble")
		if _, all := out.snapshot(); !strings.Contains(all, `"message":"before"`) || !strings.Contains(all, `"message":"trouble"`) {
			t.Errorf("%s: out holds %q right after the call; want the earlier line and the %s", level, all, level)
		}
		w.Close()
	}
}

func TestTheTimerWritesOut(t *testing.T) {
	out := &sink{}
	w := New(out, 10*time.Millisecond)
	defer w.Close()
	log := zerolog.New(w)
	log.Info().Msg("tick")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, all := out.snapshot(); strings.Contains(all, "tick") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the line was not written out within 5 s of a 10 ms interval")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCloseWritesTheRestAndLaterLinesAtOnce(t *testing.T) {
	out := &sink{}
	w := New(out, never)
	log := zerolog.New(w)
	log.Info().Msg("first")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, all := out.snapshot(); !strings.Contains(all, "first") {
		t.Fatalf("after Close out holds %q, want the buffered line", all)
	}
	log.Info().Msg("late")
	if _, all := out.snapshot(); !strings.Contains(all, "late") {
		t.Fatalf("a line after Close was held back: out holds %q", all)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

func TestAFullBufferGoesOutAndABigLinePassesInOrder(t *testing.T) {
	out := &sink{}
	w := New(out, never)
	defer w.Close()
	line := append(bytes.Repeat([]byte("x"), 1000), '\n')
	for range size/len(line) + 1 {
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if chunks, _ := out.snapshot(); len(chunks) != 1 || len(chunks[0]) > size {
		t.Fatalf("after more than %d bytes: %d writes (want 1, of at most %d bytes)", size, len(chunks), size)
	}
	big := append(bytes.Repeat([]byte("y"), 2*size), '\n')
	if _, err := w.Write(big); err != nil {
		t.Fatal(err)
	}
	chunks, all := out.snapshot()
	if len(chunks) != 3 || chunks[2] != string(big) {
		t.Fatalf("a line larger than the buffer: %d writes, want the held lines then the line whole", len(chunks))
	}
	if strings.Count(all, string(line)) != size/len(line)+1 {
		t.Fatalf("lines lost or repeated before the big one")
	}
}

func TestManyWritersLoseAndSplitNothing(t *testing.T) {
	out := &sink{}
	w := New(out, time.Millisecond)
	log := zerolog.New(w)
	const writers, lines = 16, 2000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				ev := log.Info()
				if i%97 == 0 {
					ev = log.Warn()
				}
				ev.Int("g", g).Int("i", i).Str("pad", strings.Repeat("p", i%300)).Msg("m")
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, all := out.snapshot()
	seen := map[string]bool{}
	next := make([]int, writers)
	for _, l := range strings.Split(strings.TrimSuffix(all, "\n"), "\n") {
		var g, i int
		if _, err := fmt.Sscanf(l[strings.Index(l, `"g":`):], `"g":%d,"i":%d`, &g, &i); err != nil || !strings.HasSuffix(l, `"message":"m"}`) {
			t.Fatalf("a split or mangled line: %q", l)
		}
		if seen[l] {
			t.Fatalf("a line written twice: %q", l)
		}
		seen[l] = true
		if i != next[g] {
			t.Fatalf("writer %d: line %d came after line %d", g, i, next[g]-1)
		}
		next[g]++
	}
	if len(seen) != writers*lines {
		t.Fatalf("%d lines out, want %d", len(seen), writers*lines)
	}
}
