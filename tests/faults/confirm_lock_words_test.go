package faults

import (
	"context"
	"errors"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestALockedConfirmationDoesNotOfferARecoveryCode: ann begins her first
// factor (an app named phone) and someone with her session sends wrong
// codes to its confirmation until the codes' limit refuses them (429
// too_many_attempts). A confirmation takes only a code of the new app:
// no recovery code confirms it, and this account, with no factor yet,
// has none. The refusal must not send her to one (a refusal says what to
// do next truly); the words a login's second step or a proof gets
// (TestALockedCodeSaysARecoveryCodeStillWorks) are wrong here.
func TestALockedConfirmationDoesNotOfferARecoveryCode(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, false)
	m.verify(t)
	withFactors(t, m, func(st *memstore.Store, c *accounts.Config) {
		c.Throttle = accounts.Throttle{Store: st.Attempts(), PerAddress: 5, PerLogin: 50, Window: 15 * 60e9}
		c.Audit = st.AccountAudit()
	})
	e, _ := enrolPhone(t, m)
	ctx := context.Background()
	p := domain.Principal{UserID: m.ann.ID}
	var err error
	for range 20 {
		if _, err = m.svc.ConfirmTOTP(ctx, p, m.ann.ID, e.Factor.ID, "000000"); errors.Is(err, domain.ErrTooManyAttempts) {
			break
		}
	}
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "too_many_attempts" {
		t.Fatalf("wrong codes until the limit: the last answered %v, want 429 too_many_attempts", err)
	}
	if strings.Contains(de.Message, "recovery code") {
		t.Errorf("a confirmation's refusal %q offers a recovery code, which confirms no factor (and ann has none)", de.Message)
	}
}
