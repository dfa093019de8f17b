package faults

import (
	"errors"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestALockedCodeSaysARecoveryCodeStillWorks: ann's login waits for her
// second factor, and someone sends wrong authenticator codes from her
// address until the codes' limit refuses them (429 too_many_attempts).
// The refusal said only to wait, though a recovery code is counted apart
// from the codes (by the client's address alone: a guesser of six-digit
// codes must not lock the owner out of that way in too) and still logs
// her in. It must say so, and a recovery code must then work.
func TestALockedCodeSaysARecoveryCodeStillWorks(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	var err error
	for range 20 {
		if err = f.secondStep(accounts.Proof{Code: "000000"}); errors.Is(err, domain.ErrTooManyAttempts) {
			break
		}
	}
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "too_many_attempts" {
		t.Fatalf("wrong codes until the limit: the last answered %v, want 429 too_many_attempts", err)
	}
	if !strings.Contains(de.Message, "recovery code") {
		t.Errorf("the refusal %q does not say a recovery code still works", de.Message)
	}
	if err := f.secondStep(accounts.Proof{RecoveryCode: f.recovery[0]}); err != nil {
		t.Errorf("a recovery code once the codes are locked: %v, want a session", err)
	}
}
