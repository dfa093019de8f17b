// Package password hashes and verifies user passwords with argon2id, and
// screens new ones: how guessable they are (zxcvbn, guess.go) and whether
// known breaches hold them (Have I Been Pwned's range API, pwned.go).
//
// argon2id is memory-hard, which is what makes offline guessing expensive, but
// it also means every login costs the server the same memory. A Hasher
// therefore bounds how many hashes run at once, so a burst of logins queues
// instead of exhausting memory. Hashes are stored as PHC strings, which carry
// their own parameters: raising the cost later keeps old hashes verifiable and
// tells the caller when to upgrade them.
package password

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
)

// Params are the argon2id cost parameters.
type Params struct {
	MemoryKiB uint32 // e.g. 19456 (19 MiB)
	Time      uint32 // iterations, e.g. 2
	Threads   uint8  // parallelism, e.g. 1
}

// DefaultParams is m=19456 KiB, t=2, p=1 (OWASP's minimum for argon2id).
// It is the floor, not a target: raise it when the hardware allows, and
// Verify will ask for existing hashes to be rehashed.
var DefaultParams = Params{MemoryKiB: 19456, Time: 2, Threads: 1}

const (
	saltLen = 16 // bytes; RFC 9106 recommends 16 for password hashing
	keyLen  = 32 // bytes of derived key stored in the PHC string
)

// burnSalt is the salt Burn hashes with. It is fixed because Burn's output is
// thrown away; only the work matters, and argon2's cost does not depend on
// the salt's value.
var burnSalt = []byte("shelf-burn-salt!")

// weakerThan reports whether p is cheaper than q in any dimension. Any lower
// dimension makes guessing cheaper, so one is enough to ask for a rehash.
func (p Params) weakerThan(q Params) bool {
	return p.MemoryKiB < q.MemoryKiB || p.Time < q.Time || p.Threads < q.Threads
}

// work is what one argon2id run with p costs, in KiB × passes: its time
// grows with both.
func (p Params) work() uint64 {
	return uint64(p.Time) * uint64(p.MemoryKiB)
}

// Hasher hashes and verifies passwords with fixed parameters while bounding
// how many argon2 computations run at once. It is safe for concurrent use.
type Hasher struct {
	p       Params
	sem     chan struct{} // one token per running hash; its capacity is the limit
	waiting atomic.Int64  // callers blocked on sem (Waiting)
	onWait  func(time.Duration)

	// inSlot, if set, runs while a slot is held, before argon2. Tests use it
	// to observe concurrency; it is nil in production.
	inSlot func()
}

// New returns a Hasher using p. At most limit hashes (or verifications) run
// at once; callers beyond that wait (respecting ctx), so a login flood cannot
// exhaust memory. limit <= 0 means runtime.GOMAXPROCS(0), since argon2 is
// CPU-bound and more concurrent runs than CPUs only add memory, not
// throughput.
//
// New panics if p has a zero field: argon2 cannot run with it, and failing at
// start-up beats failing on the first login.
func New(p Params, limit int) *Hasher {
	if p.MemoryKiB == 0 || p.Time == 0 || p.Threads == 0 {
		panic(fmt.Sprintf("password: invalid argon2id params %+v: every field must be positive", p))
	}
	if limit <= 0 {
		limit = runtime.GOMAXPROCS(0)
	}
	return &Hasher{p: p, sem: make(chan struct{}, limit)}
}

// Hash returns a PHC string: $argon2id$v=19$m=19456,t=2,p=1$<salt b64 raw std>$<hash b64 raw std>
// with a 16-byte random salt and a 32-byte key. The only errors are ctx's
// while waiting for a slot and a failure of the system's random source.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: reading salt: %w", err)
	}
	var phc string
	err := h.withSlot(ctx, func() { phc = hashWithSalt(password, salt, h.p) })
	if err != nil {
		return "", err
	}
	return phc, nil
}

// hashWithSalt is Hash without the randomness or the slot, so tests can
// produce a reproducible PHC string.
func hashWithSalt(password string, salt []byte, p Params) string {
	key := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	return format(p, salt, key)
}

// Verify checks password against a PHC string in constant time. ok reports a
// match; rehash reports that the stored parameters are weaker than the
// hasher's current ones in any dimension (memory, time or threads lower), so
// the caller should store a fresh Hash. rehash is only ever true together
// with ok, because a fresh hash can only be made from the right password. A
// malformed PHC string is an error; it is checked before waiting for a slot,
// so garbage costs no argon2 work.
func (h *Hasher) Verify(ctx context.Context, password, phc string) (ok, rehash bool, err error) {
	stored, err := parse(phc)
	if err != nil {
		return false, false, err
	}
	err = h.withSlot(ctx, func() {
		// The stored hash's own parameters and key length are used, so
		// hashes made before a parameter change still verify.
		key := idKey([]byte(password), stored.salt, stored.p.Time, stored.p.MemoryKiB, stored.p.Threads, uint32(len(stored.key)))
		ok = subtle.ConstantTimeCompare(key, stored.key) == 1
		// A hash made before the parameters were raised is cheaper to
		// check than Burn is to spend: the difference is spent too, so a
		// wrong password at an old account's login takes as long as one
		// at a login nobody holds
		// (TestAWrongPasswordAtAnOldHashCostsWhatAnUnknownLoginDoes).
		if extra := h.p.work() - stored.p.work(); stored.p.work() < h.p.work() {
			idKey([]byte(password), burnSalt, 1, uint32(min(extra, math.MaxUint32)), h.p.Threads, keyLen)
		}
	})
	if err != nil {
		return false, false, err
	}
	return ok, ok && stored.p.weakerThan(h.p), nil
}

// idKey is argon2id; a variable so a test can see that Burn and Verify
// really run it, and with which parameters.
var idKey = argon2.IDKey

// Burn spends the same work as one Verify with the current parameters.
// Call it for an unknown login so its timing matches a wrong password;
// otherwise a fast "no such user" answer reveals which accounts exist. It
// queues for a slot like Verify, and fails as Verify does (ctx's error,
// without the work) if ctx ends first.
func (h *Hasher) Burn(ctx context.Context, password string) error {
	return h.withSlot(ctx, func() {
		// Nothing is cached: the point is to spend the time a real
		// verification of a current-parameter hash would.
		key := idKey([]byte(password), burnSalt, h.p.Time, h.p.MemoryKiB, h.p.Threads, keyLen)
		subtle.ConstantTimeCompare(key, make([]byte, keyLen))
	})
}

// Waiting reports how many callers are waiting for a hashing slot now (the
// metrics take each wait's length instead, through OnWait). A steadily
// non-zero value means the limit, or the hardware, is too small for the
// login rate.
func (h *Hasher) Waiting() int {
	return int(h.waiting.Load())
}

// withSlot runs f while holding one of the hasher's slots, or returns
// ctx.Err() if ctx ends first.
func (h *Hasher) withSlot(ctx context.Context, f func()) error {
	if err := h.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-h.sem }()
	if h.inSlot != nil {
		h.inSlot()
	}
	f()
	return nil
}

// acquire takes a slot, waiting for one if all are busy. A caller whose ctx
// has already ended gets ctx.Err() even if a slot is free: its request is
// gone, so the work would be wasted.
func (h *Hasher) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case h.sem <- struct{}{}: // fast path: not counted as waiting
		h.observe(0)
		return nil
	default:
	}
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	start := time.Now()
	select {
	case h.sem <- struct{}{}:
		h.observe(time.Since(start))
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnWait, if set before use, is told how long each hash waited for its
// slot (zero when one was free): the metrics' hash-queue histogram.
func (h *Hasher) OnWait(f func(time.Duration)) { h.onWait = f }

func (h *Hasher) observe(d time.Duration) {
	if h.onWait != nil {
		h.onWait(d)
	}
}
