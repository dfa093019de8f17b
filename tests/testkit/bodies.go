package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// bodySchemas checks JSON bodies against openapi.yaml's schemas, each
// compiled once. kin-openapi validates a 3.1 document with the same
// JSON Schema 2020-12 library (santhosh-tekuri/jsonschema), but compiles
// the schema again for every answer, about a tenth of the end-to-end
// package's CPU under -race. Here the whole document is one resource and
// each body's schema is compiled once, by its JSON pointer, so references
// resolve as in the document.
type bodySchemas struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// documentURL names openapi.yaml as a JSON Schema resource.
const documentURL = "shelf:///openapi.json"

func newBodySchemas(doc *openapi3.T) (*bodySchemas, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseRegexpEngine(ecmaRegexp)
	// date-time and email are asserted, as kin-openapi asserts them;
	// date-time in the one form every answer writes (answerDateTime).
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "date-time", Validate: answerDateTime})
	if err := c.AddResource(documentURL, v); err != nil {
		return nil, err
	}
	return &bodySchemas{compiler: c, compiled: map[string]*jsonschema.Schema{}}, nil
}

// answerTime is openapi.yaml's conventions' form of every time an answer
// carries: UTC, exactly three fractional digits.
var answerTime = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$`)

// answerDateTime checks a date-time of an answer: a real RFC 3339 time, in
// answerTime's form (…02.340Z, never …02.34Z: strings of one width sort
// as the times do).
func answerDateTime(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil // not a string: the type keyword's to judge
	}
	if !answerTime.MatchString(s) {
		return fmt.Errorf("%q is not a UTC time with milliseconds (2006-01-02T15:04:05.000Z)", s)
	}
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		return err
	}
	return nil
}

// at compiles (once) the schema at a JSON pointer into the document.
func (b *bodySchemas) at(pointer string) (*jsonschema.Schema, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.compiled[pointer]; ok {
		return s, nil
	}
	loc := documentURL + "#" + (&url.URL{Fragment: pointer}).EscapedFragment()
	s, err := b.compiler.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml's schema at %s does not compile: %w", pointer, err)
	}
	b.compiled[pointer] = s
	return s, nil
}

// validate checks a JSON body against the schema at pointer.
func (b *bodySchemas) validate(pointer string, body []byte) error {
	s, err := b.at(pointer)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return s.Validate(v)
}

// responseBody finds where the route's answer with this status and
// Content-Type is documented: the JSON pointer of its body's schema ("" when
// the document gives the body no schema, or it is not JSON). An answer
// whose status or Content-Type the operation does not document is an error.
func responseBody(route *routers.Route, status int, contentType string) (string, error) {
	responses := route.Operation.Responses.Map()
	key := ""
	for _, k := range []string{strconv.Itoa(status), strconv.Itoa(status/100) + "XX", "default"} {
		if _, ok := responses[k]; ok {
			key = k
			break
		}
	}
	if key == "" {
		return "", fmt.Errorf("status %d is not documented", status)
	}
	ref := responses[key]
	pointer := "/paths/" + escapePointer(route.Path) + "/" + strings.ToLower(route.Method) + "/responses/" + escapePointer(key)
	if ref.Ref != "" {
		pointer = strings.TrimPrefix(ref.Ref, "#")
	}
	content := ref.Value.Content
	if len(content) == 0 {
		return "", nil
	}
	media := content.Get(contentType)
	if media == nil {
		return "", fmt.Errorf("Content-Type %q is not documented for status %d", contentType, status)
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if media.Schema == nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return "", nil
	}
	for k, m := range content {
		if m == media {
			return pointer + "/content/" + escapePointer(k) + "/schema", nil
		}
	}
	return "", fmt.Errorf("Content-Type %q matched no key of the document", contentType)
}

// ecmaUnicodeEscape is ECMA-262's \uXXXX, which the document's patterns use
// for the characters they refuse (docs/design/api-conventions.md); Go's
// regexp spells it \x{XXXX}.
var ecmaUnicodeEscape = regexp.MustCompile(`\\u([0-9A-Fa-f]{4})`)

// ecmaRegexp compiles a pattern of the document with Go's regexp.
func ecmaRegexp(pattern string) (jsonschema.Regexp, error) {
	return regexp.Compile(ecmaUnicodeEscape.ReplaceAllString(pattern, `\x{$1}`))
}

// escapePointer escapes one JSON pointer token (RFC 6901).
func escapePointer(token string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}
