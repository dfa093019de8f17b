package password

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"shelf/domain/accounts"
)

// Pwned asks Have I Been Pwned's Pwned Passwords range API whether a
// password appears in known breaches, by k-anonymity: the request carries
// the first 5 hex digits of the password's SHA-1, the answer lists the
// other 35 of every breached password that shares them (with padding
// entries, so its size says nothing either), and the match is made here.
// Neither the password nor its hash leaves the process.
type Pwned struct {
	url    string
	client *http.Client
}

var _ accounts.BreachedPasswords = (*Pwned)(nil)

// maxRangeBytes bounds the answer read: a range holds about a thousand
// lines of 40 bytes with padding; anything far larger is not one.
const maxRangeBytes = 1 << 20

// NewPwned asks the range API at base (SHELF_HIBP_URL, e.g.
// https://api.pwnedpasswords.com: GET base/range/{prefix}), each request
// bounded by timeout (SHELF_HIBP_TIMEOUT).
func NewPwned(base string, timeout time.Duration) *Pwned {
	return &Pwned{url: strings.TrimRight(base, "/"), client: &http.Client{Timeout: timeout}}
}

// Breaches implements accounts.BreachedPasswords: how often the breaches
// hold password. An error (unreachable, slow, not 200, a body that is not
// a range) says nothing about the password; the caller's SHELF_HIBP_FAIL
// decides.
func (p *Pwned) Breaches(ctx context.Context, password string) (int, error) {
	sum := sha1.Sum([]byte(password))
	digest := strings.ToUpper(hex.EncodeToString(sum[:]))
	prefix, suffix := digest[:5], digest[5:]
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/range/"+prefix, nil)
	if err != nil {
		return 0, fmt.Errorf("pwned passwords: %w", withoutRange(err, p.url))
	}
	req.Header.Set("Add-Padding", "true")
	req.Header.Set("User-Agent", "shelf")
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("pwned passwords: %w", withoutRange(err, p.url))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("pwned passwords: answered %s", resp.Status)
	}
	return rangeCount(io.LimitReader(resp.Body, maxRangeBytes+1), suffix)
}

// withoutRange is err with the URL it names (net/http's *url.Error) cut
// to the API's base: the range asked is the first 5 hex digits of the
// new password's SHA-1, and the error is logged with the request it
// checked (SHELF_HIBP_FAIL=open), whose route may name the account. The
// error stays a timeout or a cancellation where it was one.
func withoutRange(err error, base string) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	redacted := *ue
	redacted.URL = base + "/range/{prefix}"
	return &redacted
}

// errNotRange: the answer is not a range of the API.
var errNotRange = errors.New("pwned passwords: the answer is not a range")

// rangeCount reads a range ("SUFFIX:COUNT" lines, CRLF) and returns the
// count of suffix (0 when absent; padding lines count 0 too). Every line
// must have the form, and there must be one: a proxy's error page or a cut
// answer is an error, not "never breached".
func rangeCount(body io.Reader, suffix string) (int, error) {
	sc := bufio.NewScanner(body)
	read, lines, count := 0, 0, 0
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		read += len(sc.Bytes()) + 1
		if read > maxRangeBytes {
			return 0, fmt.Errorf("%w: over %d bytes", errNotRange, maxRangeBytes)
		}
		if line == "" {
			continue
		}
		hash, n, ok := strings.Cut(line, ":")
		c, err := strconv.Atoi(n)
		if !ok || len(hash) != 35 || !isHex(hash) || err != nil || c < 0 {
			return 0, fmt.Errorf("%w: line %q", errNotRange, truncate(line, 80))
		}
		lines++
		if strings.EqualFold(hash, suffix) {
			count = c
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("pwned passwords: %w", err)
	}
	if lines == 0 {
		return 0, fmt.Errorf("%w: no lines", errNotRange)
	}
	return count, nil
}

// truncate cuts s to n bytes for a log line.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func isHex(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return false
		}
	}
	return true
}
