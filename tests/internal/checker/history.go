package checker

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// History keeps every event in memory and appends it to a file.
type History struct {
	mu     sync.Mutex
	f      *os.File
	enc    *json.Encoder
	seq    atomic.Int64
	events []Event
}

// NewHistory writes the history to path (JSON lines).
func NewHistory(path string) (*History, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &History{f: f, enc: json.NewEncoder(f)}, nil
}

// Add numbers e and records it.
func (h *History) Add(e Event) {
	e.Seq = h.seq.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
	_ = h.enc.Encode(e)
}

// All is every event so far, in the order recorded.
func (h *History) All() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// Close closes the file.
func (h *History) Close() { _ = h.f.Close() }

// Client sends requests to the API processes and records each.
type Client struct {
	// Bases are the API processes' URLs (http://host:port), by index: a
	// process restarted on its address keeps its index.
	Bases []string
	H     *History
	HTTP  *http.Client
}

// Call sends one request to API api and records it as op with args; the
// answer's JSON body is returned (nil without one).
func (c *Client) Call(worker, api int, op, method, path, token string, body any, args map[string]string) (int, map[string]any) {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	e := Event{Kind: "op", Worker: worker, API: api, Op: op, Args: args, Start: time.Now()}
	if token != "" {
		e.Session = SessionLabel(token)
	}
	req, _ := http.NewRequest(method, c.Bases[api]+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	var out map[string]any
	if resp, err := c.HTTP.Do(req); err == nil {
		e.Status = resp.StatusCode
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if code, ok := out["code"].(string); ok && e.Status >= 400 {
			e.Code = code
			fields, _ := out["errors"].([]any)
			for _, f := range fields {
				if name, ok := f.(map[string]any)["field"].(string); ok {
					e.Fields = append(e.Fields, name)
				}
			}
		}
	}
	e.End = time.Now()
	if e.Status < 300 && out != nil {
		e.Result = map[string]string{}
		if id, ok := out["id"].(string); ok {
			e.Result["id"] = id
		}
		if user, ok := out["user"].(map[string]any); ok { // a login's account
			e.Result["user"], _ = user["id"].(string)
		}
		if token, ok := out["token"].(string); ok { // a login's session
			e.Result["session"] = SessionLabel(token)
		}
	}
	c.H.Add(e)
	return e.Status, out
}
