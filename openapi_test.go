package shelf

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"shelf/domain"
	"shelf/domain/library"
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
// idn-email (the server takes addresses that are not ASCII, which
// format email, RFC 5321's, refuses), and every link property states its
// http(s) rule as a pattern, so generators and fuzzers know the rule the
// server applies.
func TestEmailsAndLinksSayTheirFormat(t *testing.T) {
	var emails, links int
	walkSpec(t, func(path string, m map[string]any) {
		props, ok := m["properties"].(map[string]any)
		if !ok {
			return
		}
		if e, ok := props["email"].(map[string]any); ok {
			emails++
			if e["format"] != "idn-email" {
				t.Errorf("%s/properties/email: no format: idn-email", path)
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

// textFields are the fields people read, each with the rule domain.TextRule
// applies: whether it keeps line breaks, and whether it needs something
// other than blank space.
var textFields = map[string]struct{ lines, required bool }{
	"NewUser/displayName":      {false, true},
	"UserPatch/displayName":    {false, true},
	"NewGroup/displayName":     {false, true},
	"NewContent/name":          {false, true},
	"ContentPatch/name":        {false, true},
	"SuspensionRequest/reason": {true, true},
	"NewGroup/description":     {true, false},
	"NewContent/description":   {true, false},
	"ContentPatch/description": {true, false},
	// Recorded, not checked: the server drops what the rule refuses.
	"SessionInfo/userAgent": {false, false},
}

// textPattern is the pattern a text field must carry: no character that
// domain.RefusedInText refuses wherever it stands (Basic Multilingual
// Plane characters as \uXXXX escapes, which every dialect reads; the
// others as themselves), no white space at either end (domain.Untrimmed),
// and, for a field that needs a value, at least one character. The emoji
// joiners it lets through are the server's to judge in context, so a lone
// zero-width joiner passes the pattern and is still refused.
func textPattern(lines, required bool) string {
	var class strings.Builder
	write := func(r rune) {
		if r < 0x10000 {
			fmt.Fprintf(&class, `\u%04X`, r)
		} else {
			class.WriteRune(r)
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !domain.RefusedInText(r, lines) || (r > 0 && domain.RefusedInText(r-1, lines) && r != 0x10000) {
			continue
		}
		end := r
		for end+1 <= unicode.MaxRune && end+1 != 0x10000 && domain.RefusedInText(end+1, lines) {
			end++
		}
		write(r)
		if end > r {
			class.WriteByte('-')
			write(end)
		}
	}
	refused := class.String()
	edge := "[^" + refused + spaceClass(lines) + "]"
	value := edge + "(?:[^" + refused + "]*" + edge + ")?"
	if !required {
		return "^(?:" + value + ")?$"
	}
	return "^" + value + "$"
}

// spaceClass is the white space refused at either end (unicode.IsSpace,
// what strings.TrimSpace would trim) that the text rule does not refuse
// anyway, as a class body.
func spaceClass(lines bool) string {
	var spaces strings.Builder
	for r := rune(0); r <= 0x3000; r++ {
		if unicode.IsSpace(r) && !domain.RefusedInText(r, lines) {
			fmt.Fprintf(&spaces, `\u%04X`, r)
		}
	}
	return spaces.String()
}

// linkPattern is the pattern of link: library.ValidLink's shape, none of
// the characters ValidLink refuses in it and no blank space, or "" (no
// link).
func linkPattern() string {
	one := textPattern(false, false)
	refused := strings.TrimPrefix(one, "^(?:[^")
	refused = refused[:strings.Index(refused, spaceClass(false))]
	label := `[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?`
	return "^" + `(?:[Hh][Tt][Tt][Pp][Ss]?://` + label + `(?:\.` + label + `)*(?::[0-9]{1,5})?` +
		`(?:[/?#](?:[^%` + refused + spaceClass(false) + `]|%[0-9A-Fa-f]{2})*)?)?` + "$"
}

// TestTextFieldsStateTheInvisibleCharacterRule: the characters the server
// refuses in names, descriptions and reasons are in each field's pattern,
// so generated clients check them before sending and fuzzers know them.
func TestTextFieldsStateTheInvisibleCharacterRule(t *testing.T) {
	found := 0
	walkSpec(t, func(path string, m map[string]any) {
		for field, rule := range textFields {
			schema, property, _ := strings.Cut(field, "/")
			if path != "/components/schemas/"+schema+"/properties/"+property {
				continue
			}
			found++
			if want := textPattern(rule.lines, rule.required); m["pattern"] != want {
				t.Errorf("%s: pattern is not the text rule's; want\n%s", path, strconv.QuoteToASCII(want))
			}
		}
	})
	if found != len(textFields) {
		t.Fatalf("found %d of the %d text fields", found, len(textFields))
	}
}

// TestTextFieldsSayWhatTheServerAccepts: for every text field
// a request carries, its schema (pattern, minLength, maxLength) and
// domain.TextRule with the schema's limits accept the same values, white
// space at the ends and lengths at the edges included: nothing is trimmed
// before counting, so a schemathesis run finds no value the schema
// forbids that the server takes, nor the reverse. (The emoji joiners,
// which the pattern lets through for the server to judge in context, are
// not among the values.)
func TestTextFieldsSayWhatTheServerAccepts(t *testing.T) {
	checked := 0
	walkSpec(t, func(path string, m map[string]any) {
		for field, rule := range textFields {
			schema, property, _ := strings.Cut(field, "/")
			if path != "/components/schemas/"+schema+"/properties/"+property || schema == "SessionInfo" {
				continue
			}
			checked++
			minLength, _ := m["minLength"].(int)
			maxLength, ok := m["maxLength"].(int)
			if !ok {
				t.Errorf("%s: no maxLength", path)
				continue
			}
			if rule.required != (minLength > 0) {
				t.Errorf("%s: minLength %d, but required is %v", path, minLength, rule.required)
			}
			pattern := regexp.MustCompile(regexp.MustCompile(`\\u([0-9A-F]{4})`).ReplaceAllString(m["pattern"].(string), `\x{$1}`))
			server := domain.TextRule{Field: property, Min: minLength, Max: maxLength, Lines: rule.lines}
			full := strings.Repeat("a", maxLength)
			for _, v := range []string{"", " ", "a", " a", "a ", "a b", "a\u00A0", "\u3000a", "a\u2003b", "a\nb", "a\n", "\tb", "a\tb",
				"\r\na", "\u0085a", "a\u2028", full, " " + full, full + " ", full[1:] + " ", full + "a", "Caf\u0065\u0301",
				strings.Repeat("e\u0301", maxLength/2), strings.Repeat("e\u0301", maxLength/2+1), "\u0958",
			} {
				n := utf8.RuneCountInString(v)
				contract := pattern.MatchString(v) && n >= minLength && n <= maxLength
				_, fe := server.Check(v)
				if contract != (fe == nil) {
					t.Errorf("%s: %.30q (%d characters): the contract says %v, the server %v", path, v, n, contract, fe)
				}
			}
		}
	})
	if checked != len(textFields)-1 {
		t.Fatalf("checked %d of the %d text fields of requests", checked, len(textFields)-1)
	}
}

// TestLinksStateTheirRule: link's pattern is the rule the server applies,
// and the two agree on links near every edge of it.
func TestLinksStateTheirRule(t *testing.T) {
	want := linkPattern()
	var patterns []string
	walkSpec(t, func(path string, m map[string]any) {
		if strings.HasSuffix(path, "/properties/link") && m["pattern"] != nil {
			patterns = append(patterns, m["pattern"].(string))
			if m["pattern"] != want {
				t.Errorf("%s: pattern is not the link rule's; want\n%s", path, strconv.QuoteToASCII(want))
			}
		}
	})
	if len(patterns) != 2 {
		t.Fatalf("found %d link patterns, want 2 (NewContent, ContentPatch)", len(patterns))
	}
	// The dialect of the spec (\uXXXX) in Go's (\x{XXXX}), as kin-openapi reads it.
	spec := regexp.MustCompile(regexp.MustCompile(`\\u([0-9A-F]{4})`).ReplaceAllString(want, `\x{$1}`))
	for _, link := range []string{
		"", "  ", "https://example.org", " http://example.org/a?b=c#d ", "HTTPS://EXAMPLE.ORG:8443/x",
		"http://10.0.0.1/", "https://xn--bcher-kva.example/b%C3%BCcher", "https://example.org/bücher",
		"https://example.org/\u200D", "https://example.org/a\u3000", "https://ex-ample.org/a b",
		"ftp://example.org", "https://", "https:///path", "https://-example.org", "https://example-.org",
		"https://exa_mple.org", "https://user@example.org", "https://[::1]/", "https://example.org:port",
		"https://example.org/%zz", "https://example.org/%4", "https://example.org/\u0007",
		"https://example.org/\u3164", "https://example.org/\U000E0001", "https://bücher.example",
		"javascript:alert(1)", "https://example.org/" + strings.Repeat("a", 2030),
		"https://example.org/" + strings.Repeat("ü", 2020),
	} {
		server := link == "" || (domain.Untrimmed("link", link) == nil && library.ValidLink(link))
		if contract := spec.MatchString(link) && utf8.RuneCountInString(link) <= 2048; contract != server {
			t.Errorf("%q: the contract says %v, the server %v", link, contract, server)
		}
		if server && link != "" {
			u, err := url.Parse(link)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Errorf("%q: stored, but net/url reads %v, %v", link, u, err)
			}
		}
	}
}
