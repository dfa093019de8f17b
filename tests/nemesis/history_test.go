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
	if token != "" {
		e.Session = sessionLabel(token)
	}
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
			e.Result["session"] = sessionLabel(token)
		}
	}
	c.h.add(e)
	return e.Status, out
}
