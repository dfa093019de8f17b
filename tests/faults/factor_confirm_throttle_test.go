package faults

import (
	"context"
	"fmt"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
)

// TestWrongCodesFromManyAddressesLeaveTheOwnersNewAppConfirmable: whoever
// holds ann's password (not her phone) logs in and sends wrong app codes
// to his challenge from ten addresses, five each, filling the code's tier
// of all addresses, and keeps it full. Ann, from her own address, enrols a
// new app (her proof a recovery code, counted apart) and confirms it with
// its first code. That code is of a secret only she was shown, on an
// enrolment whose id only she was answered: nobody guesses it to any end,
// so a tier every address shares guards nothing there, and lets the thief
// refuse her every new app (429) for as long as he sends wrong codes.
// Her confirmation must go through.
func TestWrongCodesFromManyAddressesLeaveTheOwnersNewAppConfirmable(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	ctx := context.Background()
	r, err := f.svc.Login(ctx, "ann", password, accounts.Client{IP: "198.51.100.1"})
	if err != nil || r.Challenge == "" {
		t.Fatalf("the thief's login: %+v %v", r, err)
	}
	for a := range 10 {
		for range 5 {
			_, _ = f.svc.SecondFactor(ctx, r.Challenge, accounts.Proof{Code: "000000"}, accounts.Client{IP: fmt.Sprintf("198.51.100.%d", 10+a)})
		}
	}
	if _, err := f.svc.SecondFactor(ctx, r.Challenge, accounts.Proof{Code: "000000"}, accounts.Client{IP: "198.51.100.99"}); !domainIs(err, domain.ErrTooManyAttempts) {
		t.Fatalf("after 50 wrong codes a code from a new address answered %v, want too many attempts: the tier of all addresses is not full", err)
	}
	hers := accounts.WithClient(ctx, from("203.0.113.7"))
	ann := domain.Principal{UserID: f.ann.ID}
	proof := accounts.Password(password)
	proof.RecoveryCode = f.recovery[0]
	e, err := f.svc.EnrolTOTP(hers, ann, f.ann.ID, "tablet", proof)
	if err != nil {
		t.Fatalf("ann's new app, proven by a recovery code: %v", err)
	}
	factors, _, err := f.store.Factors().Read(ctx, f.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	var code string
	for _, g := range factors {
		if g.ID == e.Factor.ID {
			if code, err = f.totp.Code(g.Sealed, f.ann.ID, f.store.Now().Unix()/factor.Period); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := f.svc.ConfirmTOTP(hers, ann, f.ann.ID, e.Factor.ID, code); err != nil {
		t.Errorf("ann's confirmation of her new app from her own address, after the thief's wrong codes: %v; want it confirmed", err)
	}
}
