//go:build nemesis

package nemesis

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"regexp"
	"sync"
	"time"
)

// mailbox reads the reset links the API processes mail. They run with
// SHELF_MAILER=log (the default mailer: each mail is a log line at info,
// its link included), so the nemesis reads their log files, which it
// writes itself and which survive a killed process (opened for append).
// No test-only mailer and no SMTP server: the processes run as in
// development, with the log at info instead of error. A mail whose line a
// killed process had not flushed yet (SHELF_LOG_FLUSH_INTERVAL is 0 here)
// is lost, as a mail may be: that reset is simply not confirmed.
type mailbox struct {
	mu     sync.Mutex
	paths  []string
	read   map[string]int64    // bytes of each log already read
	tokens map[string][]string // address -> reset tokens, in the order mailed
	given  map[string]bool     // tokens handed out
}

func newMailbox(paths ...string) *mailbox {
	return &mailbox{paths: paths, read: map[string]int64{}, tokens: map[string][]string{}, given: map[string]bool{}}
}

// resetLink finds the token in a reset mail's text.
var resetLink = regexp.MustCompile(`/#/reset\?token=(\S+)`)

// scan reads what the logs gained since the last scan (whole lines only).
func (m *mailbox) scan() {
	for _, path := range m.paths {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		_, _ = f.Seek(m.read[path], io.SeekStart)
		b, _ := io.ReadAll(f)
		f.Close()
		end := bytes.LastIndexByte(b, '\n')
		if end < 0 {
			continue
		}
		m.read[path] += int64(end + 1)
		for _, line := range bytes.Split(b[:end], []byte("\n")) {
			if !bytes.Contains(line, []byte("/#/reset?token=")) {
				continue
			}
			var mail struct {
				To   string `json:"to"`
				Text string `json:"text"`
			}
			if json.Unmarshal(line, &mail) != nil {
				continue
			}
			if g := resetLink.FindStringSubmatch(mail.Text); g != nil {
				if token, err := url.QueryUnescape(g[1]); err == nil {
					m.tokens[mail.To] = append(m.tokens[mail.To], token)
				}
			}
		}
	}
}

// take waits up to wait for a reset token mailed to address that nobody
// took yet, and hands it out.
func (m *mailbox) take(address string, wait time.Duration) (string, bool) {
	deadline := time.Now().Add(wait)
	for {
		m.mu.Lock()
		m.scan()
		for _, t := range m.tokens[address] {
			if !m.given[t] {
				m.given[t] = true
				m.mu.Unlock()
				return t, true
			}
		}
		m.mu.Unlock()
		if time.Now().After(deadline) {
			return "", false
		}
		time.Sleep(200 * time.Millisecond)
	}
}
