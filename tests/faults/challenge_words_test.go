package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestAnExpiredLoginChallengeSaysLogInAgain: ann, with an authenticator,
// logs in with her password and sends her code after the challenge's
// five minutes. The refusal, 401 invalid_challenge, said "The login
// challenge has expired; ask for a new mail; log in again with your
// password.": the words of a mailed link, though a challenge is never
// mailed (the console shows the detail as it is). It must say only to log
// in again.
func TestAnExpiredLoginChallengeSaysLogInAgain(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	f.store.Advance(5*time.Minute + time.Second)
	_, err := f.svc.SecondFactor(context.Background(), f.challenge, accounts.Proof{Code: f.code(t, 0)}, accounts.Client{})
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "invalid_challenge" || len(de.Fields) != 1 || de.Fields[0].Code != "expired" {
		t.Fatalf("the code after the challenge's time: %v, want invalid_challenge, challenge expired", err)
	}
	if strings.Contains(de.Message, "mail") || !strings.Contains(de.Message, "log in again") {
		t.Errorf("the refusal says %q, want only to log in again", de.Message)
	}
}
