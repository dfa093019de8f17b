package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"shelf"
)

// Contract is openapi.yaml, loaded and validated once per test process.
type Contract struct {
	doc    *openapi3.T
	router routers.Router
	bodies *bodySchemas
}

var (
	contractOnce sync.Once
	contract     *Contract
	contractErr  error
)

// LoadContract parses and validates openapi.yaml.
func LoadContract() (*Contract, error) {
	contractOnce.Do(func() {
		// The web pages and their files are checked for status and type only.
		for _, ct := range []string{"text/html", "text/javascript", "text/css", "text/plain", "application/yaml"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(shelf.OpenAPI)
		if err != nil {
			contractErr = fmt.Errorf("openapi.yaml does not parse: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			contractErr = fmt.Errorf("openapi.yaml is not valid: %w", err)
			return
		}
		// Match paths on any host: tests serve on random ports.
		doc.Servers = nil
		router, err := gorillamux.NewRouter(doc)
		if err != nil {
			contractErr = err
			return
		}
		bodies, err := newBodySchemas(doc)
		if err != nil {
			contractErr = err
			return
		}
		contract = &Contract{doc: doc, router: router, bodies: bodies}
	})
	return contract, contractErr
}

// outsideTheDocument is where the server answers files the document
// leaves out on purpose (openapi.yaml's conventions say so): the web
// pages' scripts and styles.
const outsideTheDocument = "/assets/"

// Check validates one exchange against the contract: the response of a
// documented operation must match that operation's status, headers and
// body schema; an answer for an undocumented path or method must be an
// error (4xx or 5xx) in problem+json, except under /assets/, where an
// answer below 400 passes and only errors are checked.
func (c *Contract) Check(req *http.Request, resp *http.Response, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
			if resp.StatusCode < 400 && strings.HasPrefix(req.URL.Path, outsideTheDocument) {
				return nil
			}
			if resp.StatusCode < 400 {
				return fmt.Errorf("%s %s answered %d but openapi.yaml does not document it", req.Method, req.URL.Path, resp.StatusCode)
			}
			return c.checkProblem(resp, body)
		}
		return err
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: resp.StatusCode,
		Header: resp.Header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			ExcludeResponseBody:   true, // checked below, by c.bodies
		},
	}
	mismatch := func(err error) error {
		return fmt.Errorf("%s %s -> %d does not match openapi.yaml: %w\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
	if err := openapi3filter.ValidateResponse(req.Context(), input); err != nil {
		return mismatch(err)
	}
	pointer, err := responseBody(route, resp.StatusCode, resp.Header.Get("Content-Type"))
	if err != nil {
		return mismatch(err)
	}
	if pointer != "" {
		if err := c.bodies.validate(pointer, body); err != nil {
			return mismatch(err)
		}
	}
	if resp.StatusCode >= 400 {
		return c.checkProblem(resp, body)
	}
	return nil
}

// checkProblem checks an error answer against the Problem schema.
func (c *Contract) checkProblem(resp *http.Response, body []byte) error {
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		return fmt.Errorf("error answer %d has Content-Type %q, not application/problem+json", resp.StatusCode, ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error answer %d is not JSON: %w", resp.StatusCode, err)
	}
	if err := c.bodies.validate("/components/schemas/Problem", body); err != nil {
		return fmt.Errorf("error answer %d is not a Problem: %w\nbody: %s", resp.StatusCode, err, body)
	}
	if m, _ := v.(map[string]any); m["requestId"] != resp.Header.Get("X-Request-Id") {
		return fmt.Errorf("error body requestId %v differs from header X-Request-Id %q", m["requestId"], resp.Header.Get("X-Request-Id"))
	}
	return nil
}

// API is an HTTP client for end-to-end tests: it serves a handler on a real
// listener and checks every answer against openapi.yaml, failing the test
// on any mismatch.
type API struct {
	tb       testing.TB
	Server   *httptest.Server
	contract *Contract
	// Token, when set, is sent as the bearer token.
	Token string
}

// NewAPI serves h for the length of the test.
func NewAPI(tb testing.TB, h http.Handler) *API {
	tb.Helper()
	c, err := LoadContract()
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return &API{tb: tb, Server: srv, contract: c}
}

// As returns a client that sends token as its bearer token (the copy
// shares the server; the original is unchanged, so goroutines can each
// use their own).
func (a *API) As(token string) *API {
	c := *a
	c.Token = token
	return &c
}

// Response is an answer with its body read.
type Response struct {
	*http.Response
	Body []byte
}

// JSON decodes the body into v, failing the test if it cannot.
func (r *Response) JSON(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("body is not the JSON expected: %v\n%s", err, r.Body)
	}
}

// Problem decodes an error body.
func (r *Response) Problem(tb testing.TB) ProblemBody {
	tb.Helper()
	var p ProblemBody
	r.JSON(tb, &p)
	return p
}

// ProblemBody is a problem+json answer as tests read it.
type ProblemBody struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Code      string `json:"code"`
	RequestID string `json:"requestId"`
	Errors    []struct {
		Field   string `json:"field"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
}

// Do sends a request with a raw body and content type ("" for none) and
// checks the answer against the contract.
func (a *API) Do(method, path, contentType string, body []byte, header ...string) *Response {
	a.tb.Helper()
	req, err := http.NewRequest(method, a.Server.URL+path, bytes.NewReader(body))
	if err != nil {
		a.tb.Fatal(err)
	}
	if body == nil {
		req.Body = http.NoBody
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.Token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := a.Server.Client().Do(req)
	if err != nil {
		a.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.tb.Fatal(err)
	}
	if err := a.contract.Check(req, resp, b); err != nil {
		a.tb.Error(err)
	}
	return &Response{Response: resp, Body: b}
}

// Get sends a GET.
func (a *API) Get(path string) *Response {
	a.tb.Helper()
	return a.Do(http.MethodGet, path, "", nil)
}

// Send sends v as a JSON body.
func (a *API) Send(method, path string, v any) *Response {
	a.tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		a.tb.Fatal(err)
	}
	return a.Do(method, path, "application/json", b)
}
