package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAnOwnerInAThiefsSiteWaitsAboutOneHash: the thief sends from four
// /64s of each of a hundred /56s of an IPv6 /48 (three logins at unknown
// names from each) while the hasher works (two slots, a millisecond a
// hash). The owner logs in from another /56 of the same /48 (her
// carrier's, or her hosting provider's). The /48's 32 places went first
// come, first served, so she waited for every hash the thief's /56s had
// queued there before her: about 780 of the 1 200 (at tens of
// milliseconds each, past her request's timeout; the sessions review).
// A place that frees now goes to a /56 with the fewest in, the one
// served longest ago first: hers, never served, at the first that frees.
// What is left ahead of her is the places taken and the hashes begun
// while her login's throttle ran (65-80 measured; 369 once under the
// race detector in CI, where her throttle ran slowly). The bound sits
// between that and first come, first served's.
func TestAnOwnerInAThiefsSiteWaitsAboutOneHash(t *testing.T) {
	t.Parallel()
	const burst, lines, homes = 3, 100, 4
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	cfg := accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now,
		Throttle: accounts.Throttle{Store: st.Attempts(), PerAddress: perAddress, PerLogin: perLogin, Window: window}}
	if _, err := accounts.New(cfg, st.Claims(), st.Users(), st.Sessions(), &plainHasher{}, nopLog{}).
		Signup(context.Background(), accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: password}); err != nil {
		t.Fatal(err)
	}
	h := &workingHasher{owner: password, slots: make(chan struct{}, 2), ownerAt: -1}
	svc := accounts.New(cfg, st.Claims(), st.Users(), st.Sessions(), h, nopLog{})
	var wg sync.WaitGroup
	for a := range lines * homes {
		ip := fmt.Sprintf("2001:db8:1:%02x%02x::1", a/homes, a%homes)
		ctx := accounts.WithClient(context.Background(), from(ip))
		for i := range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = svc.Login(ctx, fmt.Sprintf("nobody%d-%d", a, i), "a guess", from(ip))
			}()
		}
	}
	for h.count() < 40 { // the thief's hashes are flowing
		time.Sleep(time.Millisecond)
	}
	own := "2001:db8:1:ff00::7"
	begun := h.count()
	res, err := svc.Login(accounts.WithClient(context.Background(), from(own)), "ann", password, from(own))
	if err != nil || res.Token == "" {
		t.Fatalf("the owner's login: %+v %v", res, err)
	}
	ahead := h.ownerStarted() - begun
	wg.Wait()
	if most := lines * homes * burst * 5 / 12; ahead > most {
		t.Errorf("%d of the thief's hashes went into the hasher between the owner's login and her hash (at most %d wanted: the places taken, and those begun while her throttle ran; first come, first served put about 780 ahead)", ahead, most)
	}
	t.Logf("the owner's hash went in after %d of the thief's (%d sent)", ahead, lines*homes*burst)
}

// workingHasher is plainHasher with two slots, each hash a millisecond
// in one: it counts the calls that went in, and where the owner's was.
type workingHasher struct {
	plainHasher
	owner string
	slots chan struct{}

	mu      sync.Mutex
	started int
	ownerAt int
}

func (h *workingHasher) work(pw string) {
	h.slots <- struct{}{}
	h.mu.Lock()
	if pw == h.owner && h.ownerAt < 0 {
		h.ownerAt = h.started
	}
	h.started++
	h.mu.Unlock()
	time.Sleep(time.Millisecond)
	<-h.slots
}

func (h *workingHasher) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started
}

func (h *workingHasher) ownerStarted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ownerAt
}

func (h *workingHasher) Verify(ctx context.Context, pw, phc string) (bool, bool, error) {
	h.work(pw)
	return h.plainHasher.Verify(ctx, pw, phc)
}

func (h *workingHasher) Burn(ctx context.Context, pw string) error {
	h.work(pw)
	return nil
}
