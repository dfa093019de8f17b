package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
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
	ctx := context.Background()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, nil)
	p := domain.Principal{UserID: m.ann.ID}
	phone, err := m.svc.EnrolTOTP(ctx, p, m.ann.ID, "phone", accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil || len(factors) != 1 {
		t.Fatalf("the enrolment: %+v %v", factors, err)
	}
	codeAt := func() string {
		c, err := totp.Code(factors[0].Sealed, m.ann.ID, m.store.Now().Unix()/factor.Period)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := m.svc.ConfirmTOTP(ctx, p, m.ann.ID, phone.Factor.ID, codeAt()); err != nil {
		t.Fatalf("confirming the factor: %v", err)
	}
	r, err := m.svc.Login(ctx, "ann", password, accounts.Client{})
	if err != nil || r.Challenge == "" {
		t.Fatalf("the login: %+v %v", r, err)
	}
	m.store.Advance(5*time.Minute + time.Second)
	_, err = m.svc.SecondFactor(ctx, r.Challenge, accounts.Proof{Code: codeAt()}, accounts.Client{})
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "invalid_challenge" || len(de.Fields) != 1 || de.Fields[0].Code != "expired" {
		t.Fatalf("the code after the challenge's time: %v, want invalid_challenge, challenge expired", err)
	}
	if strings.Contains(de.Message, "mail") || !strings.Contains(de.Message, "log in again") {
		t.Errorf("the refusal says %q, want only to log in again", de.Message)
	}
}
