package groups

import (
	"strings"
	"testing"

	"shelf/domain"
)

func TestNormalizeName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, display, key, code string
	}{
		{"Book.Club", "Book.Club", "book.club", ""},
		{"ab", "", "", "format"},
		{"book club", "", "", "format"},
		{"bo\u200bok", "", "", "invalid_characters"},
	} {
		display, key, fe := NormalizeName(tc.in)
		code := ""
		if fe != nil {
			code = fe.Code
			if fe.Field != "name" {
				t.Errorf("%q: field %q, want name", tc.in, fe.Field)
			}
		}
		if display != tc.display || key != tc.key || code != tc.code {
			t.Errorf("%q: got %q %q %q, want %q %q %q", tc.in, display, key, code, tc.display, tc.key, tc.code)
		}
	}
	// The username rules still name their own field.
	if _, _, fe := domain.NormalizeUsername("x"); fe == nil || fe.Field != "username" {
		t.Fatalf("NormalizeUsername's error: %+v", fe)
	}
}

func TestNormalizeGroupDescription(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, out, code string
	}{
		{"", "", ""},
		{"two\nlines\tand a tab", "two\nlines\tand a tab", ""},
		{"  two lines  ", "", "untrimmed"},
		{strings.Repeat("é", 1000), strings.Repeat("é", 1000), ""},
		{strings.Repeat("é", 1001), "", "too_long"},
		{"bell\a", "", "invalid_characters"},
		{"Hangul\u3164filler", "", "invalid_characters"},
		{"line\u2028separator", "", "invalid_characters"},
		{strings.Repeat("é", 100000), "", "too_long"}, // one code whatever the length
		{"❤️ club", "❤️ club", ""},
		{"❤️ club\n", "", "untrimmed"},
	} {
		out, fe := normalizeGroupDescription(tc.in)
		code := ""
		if fe != nil {
			code = fe.Code
			if fe.Field != "description" {
				t.Errorf("%q: field %q", tc.in, fe.Field)
			}
		}
		if out != tc.out || code != tc.code {
			t.Errorf("%q: got %q %q, want %q %q", tc.in, out, code, tc.out, tc.code)
		}
	}
}
