package shelf

import (
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// walkSpec walks openapi.yaml as plain YAML: each mapping is visited
// with its path (keys joined by "/").
func walkSpec(t *testing.T, visit func(path string, m map[string]any)) {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			visit(path, v)
			for k, child := range v {
				walk(path+"/"+k, child)
			}
		case []any:
			for i, child := range v {
				walk(fmt.Sprintf("%s/%d", path, i), child)
			}
		}
	}
	walk("", doc)
}

// TestEnumsAreSharedComponents: an enum written out where a field uses it
// makes generators emit one type per use (four visibility types once);
// every enum but the probes' status is a schema of its own under
// components/schemas, which fields reference.
func TestEnumsAreSharedComponents(t *testing.T) {
	walkSpec(t, func(path string, m map[string]any) {
		if _, ok := m["enum"]; !ok {
			return
		}
		parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
		shared := len(parts) == 3 && parts[0] == "components" && parts[1] == "schemas"
		if !shared && !strings.HasPrefix(path, "/components/schemas/HealthStatus/") {
			t.Errorf("%s: an enum written out in place; make it a schema under components/schemas and reference it", path)
		}
	})
}

// TestEmailsAndLinksSayTheirFormat: every email property says format
// email, and every link property states its http(s) rule as a pattern,
// so generators and fuzzers know the rule the server applies.
func TestEmailsAndLinksSayTheirFormat(t *testing.T) {
	var emails, links int
	walkSpec(t, func(path string, m map[string]any) {
		props, ok := m["properties"].(map[string]any)
		if !ok {
			return
		}
		if e, ok := props["email"].(map[string]any); ok {
			emails++
			if e["format"] != "email" {
				t.Errorf("%s/properties/email: no format: email", path)
			}
		}
		if l, ok := props["link"].(map[string]any); ok && path != "/components/schemas/Content" {
			links++
			if p, _ := l["pattern"].(string); !strings.Contains(p, "[Hh][Tt][Tt][Pp][Ss]?://") {
				t.Errorf("%s/properties/link: no http(s) pattern", path)
			}
		}
	})
	if emails < 3 || links < 2 {
		t.Fatalf("found %d email and %d link properties; the walk missed some", emails, links)
	}
}

// TestNonJSONAnswersAreStringsGeneratorsCanHandOver: a generated client
// parses an answer by its schema, so an answer that is not JSON must be
// described as a string (text/* handed over as text; any other type as
// bytes, format binary: a YAML document described as an object is parsed
// as JSON and fails), and `*/*` (which generators drop) is never used.
// The pages' files under /assets/ are left out of the document.
func TestNonJSONAnswersAreStringsGeneratorsCanHandOver(t *testing.T) {
	var seen int
	walkSpec(t, func(path string, m map[string]any) {
		if strings.HasPrefix(path, "/paths//assets") {
			t.Errorf("%s: the pages' files are not part of the API document", path)
		}
		content, ok := m["content"].(map[string]any)
		if !ok || !strings.Contains(path, "/responses/") {
			return
		}
		for mediaType, v := range content {
			if mediaType == "*/*" {
				t.Errorf("%s: content */*: generators leave such a response out", path)
				continue
			}
			if strings.HasSuffix(mediaType, "json") {
				continue
			}
			seen++
			schema, _ := v.(map[string]any)["schema"].(map[string]any)
			if schema["type"] != "string" {
				t.Errorf("%s/%s: not a string: %v", path, mediaType, schema)
			}
			if !strings.HasPrefix(mediaType, "text/") && schema["format"] != "binary" {
				t.Errorf("%s/%s: neither text nor format binary: a generated client would try to parse it", path, mediaType)
			}
		}
	})
	if seen < 4 {
		t.Fatalf("found %d non-JSON answers (the console, the docs, the metrics, this document); the walk missed some", seen)
	}
}
