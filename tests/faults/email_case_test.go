package faults

import (
	"errors"
	"testing"

	"shelf/domain"
)

// TestTwoCasesOfOneAddressAreOneAccount: ann signs up with aᎠ@example.org
// (CHEROKEE LETTER A), then a stranger with aꭰ@example.org (its small
// letter): one address under full case folding (U1), so the stranger gets
// 409 naming email, and ann logs in by either spelling. Before, x/text's
// Fold swapped the two cases, the keys differed, and both signups
// answered 201.
func TestTwoCasesOfOneAddressAreOneAccount(t *testing.T) {
	t.Parallel()
	w := newWorld()
	if err := w.signup("ann", "a\u13a0@example.org"); err != nil {
		t.Fatal(err)
	}
	err := w.signup("stranger", "a\uab70@example.org")
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.ErrConflict || len(de.Fields) != 1 || de.Fields[0].Field != "email" {
		t.Fatalf("a second account for the same address in another case: %v", err)
	}
	for _, spelling := range []string{"a\u13a0@example.org", "a\uab70@example.org"} {
		if !canLogin(w, spelling, me(w).ID) {
			t.Errorf("ann cannot log in as %q", spelling)
		}
	}
}
