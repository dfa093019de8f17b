package library

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"shelf/domain"
)

// TestItemTextRules: an item's name and description follow the one rule of
// text people read (domain.TextRule): no invisible character but the
// parts of emoji sequences, one code per rule whatever the length, and
// what is kept is trimmed and in NFC.
func TestItemTextRules(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		in                Input
		name, description string
		field, code       string
	}{
		{Input{Name: str("Caf\u0065\u0301 👩🏽‍💻"), Description: str("two\nlines\tand a tab")}, "Café 👩🏽‍💻", "two\nlines\tand a tab", "", ""},
		{Input{Name: str(" Café")}, "", "", "name", "untrimmed"},
		{Input{Description: str("two\nlines\n")}, "", "", "description", "untrimmed"},
		{Input{Link: str(" https://example.org")}, "", "", "link", "untrimmed"},
		{Input{Link: str(" ")}, "", "", "link", "untrimmed"},
		{Input{Name: str("a\u3164")}, "", "", "name", "invalid_characters"},
		{Input{Name: str("\u2800")}, "", "", "name", "invalid_characters"},
		{Input{Name: str("")}, "", "", "name", "length"},
		{Input{Name: str(strings.Repeat("n", 201))}, "", "", "name", "length"},
		{Input{Name: str(strings.Repeat("n", 100000))}, "", "", "name", "length"},
		{Input{Description: str("a\u2029b")}, "", "", "description", "invalid_characters"},
		{Input{Description: str("a\u034Fb")}, "", "", "description", "invalid_characters"},
		{Input{Description: str(strings.Repeat("d", 5001))}, "", "", "description", "too_long"},
		{Input{Description: str(strings.Repeat("d", 100000))}, "", "", "description", "too_long"},
	} {
		var c Content
		err := tc.in.apply(&c)
		if tc.code == "" {
			if err != nil || c.Name != tc.name || c.Description != tc.description {
				t.Errorf("%+v: %v, kept %q %q", tc.in, err, c.Name, c.Description)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != tc.field || de.Fields[0].Code != tc.code {
			t.Errorf("%.40q: %v, want %s %s", *firstOf(tc.in.Name, tc.in.Description), err, tc.field, tc.code)
		}
	}
}

func firstOf(a, b *string) *string {
	if a != nil {
		return a
	}
	return b
}

// TestACreationNamesEveryFieldItRefuses: a creation refused names every
// field that is wrong, a missing one beside one that breaks its rule, as
// a signup does: answered "name is required" alone, a client sending
// {"visibility":"secret"} fixes the name and is refused again for the
// visibility it was never told of.
func TestACreationNamesEveryFieldItRefuses(t *testing.T) {
	t.Parallel()
	s := New(Config{}, nil, nil, nil, Stores{}, nil)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		in   Input
		want []string
	}{
		{Input{}, []string{"name required", "visibility required"}},
		{Input{Visibility: str("secret")}, []string{"name required", "visibility oneof"}},
		{Input{Name: str(" x")}, []string{"name untrimmed", "visibility required"}},
		{Input{Name: str("x"), Link: str("ftp://x")}, []string{"visibility required", "link format"}},
	} {
		_, err := s.Create(context.Background(), domain.Principal{UserID: "u_x"}, tc.in)
		var de *domain.Error
		var got []string
		if errors.As(err, &de) && errors.Is(err, domain.ErrInvalid) {
			for _, f := range de.Fields {
				got = append(got, f.Field+" "+f.Code)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v (fields %q), want %q", tc.in, err, got, tc.want)
		}
	}
}
