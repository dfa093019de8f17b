package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/tools/localcassandra"
)

// MailpitVersion is the mailpit the SMTP tests run: a real SMTP server
// with an HTTP API to read what it received (github.com/axllent/mailpit, a
// Go program: built from the Go module proxy with the Go toolchain alone).
const MailpitVersion = "v1.27.11"

// mailpitBuild builds mailpit once per test process.
var mailpitBuild struct {
	once sync.Once
	bin  string
	err  error
}

// mailpitBin returns mailpit's binary, building it into
// .cache/mailpit/<version>/ the first time (go install of the exact
// version; about a minute). It is built in a temporary folder and renamed
// into place, so test processes building it at once do no harm.
func mailpitBin() (string, error) {
	mailpitBuild.once.Do(func() {
		root, err := localcassandra.RepoRoot()
		if err != nil {
			mailpitBuild.err = err
			return
		}
		dir := filepath.Join(root, ".cache", "mailpit", MailpitVersion)
		bin := filepath.Join(dir, "mailpit")
		if _, err := os.Stat(bin); err == nil {
			mailpitBuild.bin = bin
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			mailpitBuild.err = err
			return
		}
		tmp, err := os.MkdirTemp(dir, "build-")
		if err != nil {
			mailpitBuild.err = err
			return
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command("go", "install", "github.com/axllent/mailpit@"+MailpitVersion)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			mailpitBuild.err = fmt.Errorf("building mailpit %s: %v\n%s", MailpitVersion, err, out)
			return
		}
		if err := os.Rename(filepath.Join(tmp, "mailpit"), bin); err != nil {
			mailpitBuild.err = err
			return
		}
		mailpitBuild.bin = bin
	})
	return mailpitBuild.bin, mailpitBuild.err
}

// Mailpit is a running mailpit: its SMTP port on loopback, and its API.
type Mailpit struct {
	SMTPHost string
	SMTPPort int
	api      string
}

// StartMailpit runs a mailpit of the test's own on loopback ports (no
// version check, no authentication, its database in the test's temporary
// folder) and stops it when the test ends. The two ports are free when
// chosen but may be taken by another test's mailpit before this one binds
// them (it then exits "address already in use"); a mailpit that exits
// before it answers is started again on new ports.
func StartMailpit(tb testing.TB) *Mailpit {
	tb.Helper()
	bin, err := mailpitBin()
	if err != nil {
		tb.Fatal(err)
	}
	const attempts = 5
	for attempt := 1; ; attempt++ {
		smtpPort, httpPort := freePorts(tb)
		m, err := startMailpit(tb, bin, smtpPort, httpPort)
		if err == nil {
			return m
		}
		if attempt == attempts {
			tb.Fatalf("mailpit, %d attempts: %v", attempts, err)
		}
		tb.Logf("mailpit, attempt %d: %v; again on new ports", attempt, err)
	}
}

// startMailpit starts one mailpit on the two ports and waits until its
// API answers; it says why when the process exits first or 30 s pass.
//
// Its API lives under a webroot of its own, so an answer from another
// test's mailpit (which took the port this one failed to bind) is a 404,
// never taken for this one's.
func startMailpit(tb testing.TB, bin string, smtpPort, httpPort int) (*Mailpit, error) {
	webroot := fmt.Sprintf("m%x", rand.Uint64())
	cmd := exec.Command(bin,
		"--smtp", net.JoinHostPort("127.0.0.1", strconv.Itoa(smtpPort)),
		"--listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)),
		"--database", filepath.Join(tb.TempDir(), "mailpit.db"),
		"--webroot", webroot,
		"--disable-version-check", "--smtp-disable-rdns", "--quiet")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	m := &Mailpit{SMTPHost: "127.0.0.1", SMTPPort: smtpPort, api: fmt.Sprintf("http://127.0.0.1:%d/%s/api/v1", httpPort, webroot)}
	// Each try is bounded: whatever else holds the port may accept and
	// never answer.
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(m.api + "/info")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				tb.Cleanup(func() {
					_ = cmd.Process.Kill()
					<-exited
				})
				return m, nil
			}
		}
		select {
		case werr := <-exited:
			return nil, fmt.Errorf("it exited before answering on %d (SMTP %d): %v", httpPort, smtpPort, werr)
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return nil, fmt.Errorf("it did not answer within 30 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts returns two distinct loopback TCP ports nobody listens on now
// (both held open while the second is chosen, so they differ).
func freePorts(tb testing.TB) (int, int) {
	tb.Helper()
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1]
}

// Mail is a message as mailpit received it.
type Mail struct {
	ID      string
	To      []string
	From    string
	Subject string
	Text    string
}

// Messages lists every message received for the address to, newest first.
func (m *Mailpit) Messages(tb testing.TB, to string) []Mail {
	tb.Helper()
	var list struct {
		Messages []struct {
			ID      string `json:"ID"`
			Subject string `json:"Subject"`
			From    struct {
				Address string `json:"Address"`
			} `json:"From"`
			To []struct {
				Address string `json:"Address"`
			} `json:"To"`
		} `json:"messages"`
	}
	m.get(tb, "/search?query="+url.QueryEscape(`to:"`+to+`"`), &list)
	var out []Mail
	for _, s := range list.Messages {
		mail := Mail{ID: s.ID, From: s.From.Address, Subject: s.Subject}
		for _, a := range s.To {
			mail.To = append(mail.To, a.Address)
		}
		var full struct {
			Text string `json:"Text"`
		}
		m.get(tb, "/message/"+s.ID, &full)
		mail.Text = full.Text
		out = append(out, mail)
	}
	return out
}

// WaitFor waits until at least n messages to the address have arrived and
// returns them, newest first.
func (m *Mailpit) WaitFor(tb testing.TB, to string, n int) []Mail {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := m.Messages(tb, to)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d messages to %s after 20 s, want %d", len(got), to, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get reads path from mailpit's API into v. A read is safe to send again,
// so an answer other than 200 is asked again a few times before it fails
// the test: mailpit answers 400 when its storage errs (on a loaded
// machine, just after it started), and says why in the body.
func (m *Mailpit) get(tb testing.TB, path string, v any) {
	tb.Helper()
	const attempts = 5
	for attempt := 1; ; attempt++ {
		status, body, err := m.read(path)
		if err == nil && status == http.StatusOK {
			if err := json.Unmarshal(body, v); err != nil {
				tb.Fatalf("mailpit %s: %v", path, err)
			}
			return
		}
		why := fmt.Sprintf("%d %s", status, bytes.TrimSpace(body))
		if err != nil {
			why = err.Error()
		}
		if attempt == attempts {
			tb.Fatalf("mailpit %s, %d attempts: %s", path, attempts, why)
		}
		tb.Logf("mailpit %s, attempt %d: %s; again", path, attempt, why)
		time.Sleep(200 * time.Millisecond)
	}
}

func (m *Mailpit) read(path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.api+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// TokenIn returns the token of the first link to page ("verify",
// "reset", "revert-email", "refuse-email" or "revert-factor") in a
// mail's text.
func TokenIn(tb testing.TB, text, page string) string {
	tb.Helper()
	marker := "/#/" + page + "?token="
	i := strings.Index(text, marker)
	if i < 0 {
		tb.Fatalf("no %s link in the mail:\n%s", page, text)
	}
	rest := text[i+len(marker):]
	if j := strings.IndexAny(rest, " \r\n"); j >= 0 {
		rest = rest[:j]
	}
	token, err := url.QueryUnescape(rest)
	if err != nil {
		tb.Fatal(err)
	}
	return token
}
