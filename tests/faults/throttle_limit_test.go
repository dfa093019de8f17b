package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestALimitAboveWhatAReadTakesStillLimits: SHELF_THROTTLE_PER_LOGIN (or
// PER_ADDRESS) above the rows a read takes of a scope (512) is a limit
// all the same. A read meets at most 512 of the login's failures and 512
// of its tries, oldest first, so with a limit of 600 the 513th wrong
// password onwards found 512 counted, "room for one more", and every
// later guess was verified: past 512 the tier limited nothing. A read cut
// at its bound is refused (docs/design/throttle.md, "a whole window if a
// read was cut at 512"): the limit is then 512, never none.
func TestALimitAboveWhatAReadTakesStillLimits(t *testing.T) {
	t.Parallel()
	const limit, guesses = 600, 700
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	h := &countingHasher{}
	svc := accounts.New(accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now,
		Throttle: accounts.Throttle{Store: st.Attempts(), PerLogin: limit, Window: window}},
		st.Claims(), st.Users(), st.Sessions(), h, nopLog{})
	ctx := context.Background()
	if _, err := svc.Signup(ctx, accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: password}); err != nil {
		t.Fatal(err)
	}
	before := h.runs.Load()
	wrong, refused := 0, 0
	for i := range guesses {
		_, err := svc.Login(ctx, "ann", "wrong", from(fmt.Sprintf("10.%d.%d.1", i/256, i%256)))
		switch {
		case errors.Is(err, accounts.ErrInvalidCredentials):
			wrong++
		case errors.Is(err, domain.ErrTooManyAttempts):
			refused++
		default:
			t.Fatalf("guess %d: %v", i, err)
		}
		st.Advance(100 * time.Millisecond) // 700 guesses in 70 s: all within the window
	}
	if n := h.runs.Load() - before; n > limit || wrong > limit {
		t.Fatalf("%d wrong passwords verified (%d answered 401, %d refused) in one window at a login limited to %d", n, wrong, refused, limit)
	}
}
