//go:build nemesis

package nemesis

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// event is one line of the history: a request and its answer, or a fault.
// Status 0 is no answer at all (timeout, connection refused): like a 503,
// indeterminate.
type event struct {
	Seq    int64             `json:"seq"`
	Kind   string            `json:"kind"` // "op" or "fault"
	Worker int               `json:"worker,omitempty"`
	API    int               `json:"api"`
	Op     string            `json:"op"`
	Args   map[string]string `json:"args,omitempty"`
	Start  time.Time         `json:"start"`
	End    time.Time         `json:"end"`
	Status int               `json:"status,omitempty"`
	Code   string            `json:"code,omitempty"` // problem code
	Result map[string]string `json:"result,omitempty"`
}

// indeterminate reports an answer that says nothing of the outcome.
func (e event) indeterminate() bool {
	return e.Status == 0 || e.Status == http.StatusServiceUnavailable
}

// history keeps every event in memory and appends it to a file.
type history struct {
	mu     sync.Mutex
	f      *os.File
	enc    *json.Encoder
	seq    atomic.Int64
	events []event
}

func newHistory(path string) (*history, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &history{f: f, enc: json.NewEncoder(f)}, nil
}

func (h *history) add(e event) {
	e.Seq = h.seq.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
	_ = h.enc.Encode(e)
}

func (h *history) all() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]event(nil), h.events...)
}

func (h *history) close() { _ = h.f.Close() }

// client sends requests to the API processes and records each.
type client struct {
	apis []*apiProc
	h    *history
	http *http.Client
}

// call sends one request to API api and records it as op with args; the
// answer's JSON body is returned (nil without one).
func (c *client) call(worker, api int, op, method, path, token string, body any, args map[string]string) (int, map[string]any) {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	e := event{Kind: "op", Worker: worker, API: api, Op: op, Args: args, Start: time.Now()}
	req, _ := http.NewRequest(method, c.apis[api].base()+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	var out map[string]any
	if resp, err := c.http.Do(req); err == nil {
		e.Status = resp.StatusCode
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if code, ok := out["code"].(string); ok && e.Status >= 400 {
			e.Code = code
		}
	}
	e.End = time.Now()
	if e.Status < 300 && out != nil {
		e.Result = map[string]string{}
		for _, k := range []string{"id", "token"} {
			if v, ok := out[k].(string); ok && k != "token" {
				e.Result[k] = v
			}
		}
	}
	c.h.add(e)
	return e.Status, out
}
