package password

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
)

// fast keeps tests quick; the code paths do not depend on the cost.
var fast = Params{MemoryKiB: 64, Time: 1, Threads: 1}

var fixedSalt = []byte("0123456789abcdef")

func TestDefaultParams(t *testing.T) {
	t.Parallel()
	if DefaultParams != (Params{MemoryKiB: 19456, Time: 2, Threads: 1}) {
		t.Fatalf("DefaultParams = %+v", DefaultParams)
	}
	h := New(DefaultParams, 0)
	if cap(h.sem) != runtime.GOMAXPROCS(0) {
		t.Fatalf("limit 0 gave %d slots, want GOMAXPROCS %d", cap(h.sem), runtime.GOMAXPROCS(0))
	}
	phc, err := h.Hash(context.Background(), "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(phc, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("phc %q", phc)
	}
	ok, rehash, err := h.Verify(context.Background(), "correct horse", phc)
	if err != nil || !ok || rehash {
		t.Fatalf("Verify = %v, %v, %v", ok, rehash, err)
	}
}

func TestNewRejectsZeroParams(t *testing.T) {
	t.Parallel()
	for _, p := range []Params{{0, 1, 1}, {64, 0, 1}, {64, 1, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic", p)
				}
			}()
			New(p, 1)
		}()
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	h := New(fast, 2)
	ctx := context.Background()
	phc, err := h.Hash(ctx, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := parse(phc)
	if err != nil {
		t.Fatalf("own output does not parse: %v", err)
	}
	if stored.p != fast || len(stored.salt) != saltLen || len(stored.key) != keyLen {
		t.Fatalf("parsed %+v salt %d key %d", stored.p, len(stored.salt), len(stored.key))
	}
	ok, rehash, err := h.Verify(ctx, "s3cret", phc)
	if err != nil || !ok || rehash {
		t.Fatalf("Verify right = %v, %v, %v", ok, rehash, err)
	}
	ok, rehash, err = h.Verify(ctx, "s3cret!", phc)
	if err != nil || ok || rehash {
		t.Fatalf("Verify wrong = %v, %v, %v", ok, rehash, err)
	}
	ok, _, err = h.Verify(ctx, "", phc)
	if err != nil || ok {
		t.Fatalf("Verify empty = %v, %v", ok, err)
	}
}

func TestSaltMakesHashesDiffer(t *testing.T) {
	t.Parallel()
	h := New(fast, 2)
	a, err := h.Hash(context.Background(), "same")
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Hash(context.Background(), "same")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two hashes of one password are equal: %s", a)
	}
}

// TestKnownPHC pins the format and checks that Verify accepts a hash it did
// not just make with a random salt. The expected key is computed with
// argon2.IDKey directly, so the test checks our encoding, not a magic value.
func TestKnownPHC(t *testing.T) {
	t.Parallel()
	phc := hashWithSalt("hunter2", fixedSalt, fast)
	want := "$argon2id$v=19$m=64,t=1,p=1$MDEyMzQ1Njc4OWFiY2RlZg$" +
		b64.EncodeToString(argon2.IDKey([]byte("hunter2"), fixedSalt, 1, 64, 1, 32))
	if phc != want {
		t.Fatalf("phc\n got %s\nwant %s", phc, want)
	}
	if again := hashWithSalt("hunter2", fixedSalt, fast); again != phc {
		t.Fatalf("not deterministic: %s vs %s", again, phc)
	}
	h := New(fast, 1)
	ok, rehash, err := h.Verify(context.Background(), "hunter2", phc)
	if err != nil || !ok || rehash {
		t.Fatalf("Verify = %v, %v, %v", ok, rehash, err)
	}
	if ok, _, _ := h.Verify(context.Background(), "hunter3", phc); ok {
		t.Fatal("wrong password verified")
	}
}

func TestRehash(t *testing.T) {
	t.Parallel()
	current := Params{MemoryKiB: 128, Time: 2, Threads: 2}
	h := New(current, 4)
	for _, tc := range []struct {
		name   string
		stored Params
		want   bool
	}{
		{"equal", current, false},
		{"all higher", Params{MemoryKiB: 256, Time: 3, Threads: 3}, false},
		{"lower memory", Params{MemoryKiB: 64, Time: 2, Threads: 2}, true},
		{"lower time", Params{MemoryKiB: 128, Time: 1, Threads: 2}, true},
		{"lower threads", Params{MemoryKiB: 128, Time: 2, Threads: 1}, true},
		{"higher memory, lower time", Params{MemoryKiB: 256, Time: 1, Threads: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			phc := hashWithSalt("pw", fixedSalt, tc.stored)
			ok, rehash, err := h.Verify(context.Background(), "pw", phc)
			if err != nil || !ok || rehash != tc.want {
				t.Fatalf("Verify = %v, %v, %v; want rehash %v", ok, rehash, err, tc.want)
			}
			// A wrong password must never prompt storing a new hash.
			ok, rehash, err = h.Verify(context.Background(), "nope", phc)
			if err != nil || ok || rehash {
				t.Fatalf("Verify wrong = %v, %v, %v", ok, rehash, err)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	t.Parallel()
	good := hashWithSalt("pw", fixedSalt, fast)
	f := strings.Split(good, "$") // "", alg, v, params, salt, hash
	join := func(alg, v, params, salt, hash string) string {
		return strings.Join([]string{"", alg, v, params, salt, hash}, "$")
	}
	for _, tc := range []struct{ name, phc string }{
		{"empty", ""},
		{"argon2i", join("argon2i", f[2], f[3], f[4], f[5])},
		{"argon2d", join("argon2d", f[2], f[3], f[4], f[5])},
		{"bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
		{"upper-case algorithm", join("ARGON2ID", f[2], f[3], f[4], f[5])},
		{"version 16", join(f[1], "v=16", f[3], f[4], f[5])},
		{"no version", "$argon2id$" + strings.Join(f[3:], "$")},
		{"version leading zero", join(f[1], "v=019", f[3], f[4], f[5])},
		{"missing hash", strings.Join(f[:5], "$")},
		{"missing leading $", strings.TrimPrefix(good, "$")},
		{"extra field", good + "$abc"},
		{"trailing $", good + "$"},
		{"missing param", join(f[1], f[2], "m=64,t=1", f[4], f[5])},
		{"reordered params", join(f[1], f[2], "t=1,m=64,p=1", f[4], f[5])},
		{"extra param", join(f[1], f[2], "m=64,t=1,p=1,k=1", f[4], f[5])},
		{"zero memory", join(f[1], f[2], "m=0,t=1,p=1", f[4], f[5])},
		{"zero time", join(f[1], f[2], "m=64,t=0,p=1", f[4], f[5])},
		{"zero threads", join(f[1], f[2], "m=64,t=1,p=0", f[4], f[5])},
		{"negative", join(f[1], f[2], "m=-64,t=1,p=1", f[4], f[5])},
		{"plus sign", join(f[1], f[2], "m=+64,t=1,p=1", f[4], f[5])},
		{"leading zero", join(f[1], f[2], "m=064,t=1,p=1", f[4], f[5])},
		{"threads overflow", join(f[1], f[2], "m=64,t=1,p=256", f[4], f[5])},
		{"memory overflow", join(f[1], f[2], "m=4294967296,t=1,p=1", f[4], f[5])},
		{"bad base64 salt", join(f[1], f[2], f[3], "!!!!", f[5])},
		{"bad base64 hash", join(f[1], f[2], f[3], f[4], f[5][:10]+"*"+f[5][11:])},
		{"padded salt", join(f[1], f[2], f[3], f[4]+"==", f[5])},
		{"url alphabet", join(f[1], f[2], f[3], f[4], strings.NewReplacer("+", "-", "/", "_").Replace(f[5])+"-_")},
		{"newline in hash", join(f[1], f[2], f[3], f[4], f[5][:8]+"\n"+f[5][8:])},
		{"non-zero trailing bits", join(f[1], f[2], f[3], f[4][:len(f[4])-1]+"h", f[5])},
		{"empty salt", join(f[1], f[2], f[3], "", f[5])},
		{"empty hash", join(f[1], f[2], f[3], f[4], "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const pw = "PASSWORD-MUST-NOT-LEAK"
			ok, rehash, err := New(fast, 1).Verify(context.Background(), pw, tc.phc)
			if err == nil || ok || rehash {
				t.Fatalf("Verify(%q) = %v, %v, %v; want an error", tc.phc, ok, rehash, err)
			}
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("error leaks the password: %v", err)
			}
		})
	}
	// Guard the table itself: the unmodified string must be accepted, or the
	// cases above prove nothing.
	if _, err := parse(good); err != nil {
		t.Fatalf("good PHC rejected: %v", err)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	const limit, callers = 2, 16
	h := New(fast, limit)
	var inFlight, maxSeen atomic.Int32
	h.inSlot = func() {
		n := inFlight.Add(1)
		for {
			m := maxSeen.Load()
			if n <= m || maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		// Hold the slot long enough that, without the limit, callers
		// would certainly overlap.
		time.Sleep(5 * time.Millisecond)
		inFlight.Add(-1)
	}
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			if _, err := h.Hash(context.Background(), "pw"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := maxSeen.Load(); got != limit {
		t.Fatalf("max in flight %d, want exactly %d", got, limit)
	}
	if w := h.Waiting(); w != 0 {
		t.Fatalf("Waiting() = %d after all done", w)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	h := New(fast, 1)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.inSlot = func() {
		once.Do(func() { // only the first caller blocks, holding the one slot
			close(entered)
			<-release
		})
	}
	holder := make(chan error, 1)
	go func() {
		_, err := h.Hash(context.Background(), "holder")
		holder <- err
	}()
	<-entered

	phc := hashWithSalt("pw", fixedSalt, fast)
	calls := map[string]func(context.Context) error{
		"Hash": func(ctx context.Context) error {
			_, err := h.Hash(ctx, "pw")
			return err
		},
		"Verify": func(ctx context.Context) error {
			_, _, err := h.Verify(ctx, "pw", phc)
			return err
		},
		"Burn": func(ctx context.Context) error {
			return h.Burn(ctx, "pw")
		},
	}
	for name, call := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- call(ctx) }()
		waitFor(t, func() bool { return h.Waiting() == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err %v, want context.Canceled", name, err)
		}
		waitFor(t, func() bool { return h.Waiting() == 0 })
	}

	// Already-cancelled ctx: no work even though we never free the slot.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Hash(ctx, "pw"); !errors.Is(err, context.Canceled) {
		t.Errorf("Hash with cancelled ctx: %v", err)
	}

	close(release)
	if err := <-holder; err != nil {
		t.Fatalf("holder: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBurnCost checks that Burn does the work of a Verify: argon2id once,
// with the hasher's current parameters, as a verification of a current
// hash would. (Counted, not timed: a timing comparison fails on a busy
// machine.)
func TestBurnCost(t *testing.T) {
	p := Params{MemoryKiB: 4096, Time: 2, Threads: 1}
	h := New(p, 1)
	ctx := context.Background()
	type call struct{ time, memory uint32 }
	var calls []call
	idKey = func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
		calls = append(calls, call{time, memory})
		return argon2.IDKey(password, salt, time, memory, threads, keyLen)
	}
	t.Cleanup(func() { idKey = argon2.IDKey })
	if err := h.Burn(ctx, "wrong"); err != nil {
		t.Fatal(err)
	}
	phc := hashWithSalt("pw", fixedSalt, p)
	if _, _, err := h.Verify(ctx, "wrong", phc); err != nil {
		t.Fatal(err)
	}
	want := call{p.Time, p.MemoryKiB}
	if len(calls) != 2 || calls[0] != want || calls[1] != want {
		t.Fatalf("argon2id ran %+v, want Burn and Verify each once with %+v", calls, want)
	}
}

// TestAWrongPasswordAtAnOldHashCostsWhatAnUnknownLoginDoes: a login at an
// unknown name burns a hash with the current parameters; a wrong password
// at a known one verified with the stored hash's own, and a hash made
// before the parameters were raised (every account not logged in to
// since) is cheaper: at m=19 MiB against 64 MiB, some 30 ms quicker than
// the burn, so a guesser's few tries told which logins exist. A
// verification of a weaker hash now spends the difference too: as much
// work as a current one (time × memory, counted, not timed).
func TestAWrongPasswordAtAnOldHashCostsWhatAnUnknownLoginDoes(t *testing.T) {
	old := Params{MemoryKiB: 1024, Time: 1, Threads: 1}
	for _, now := range []Params{
		{MemoryKiB: 4096, Time: 2, Threads: 1},
		{MemoryKiB: 1024, Time: 3, Threads: 1},
		{MemoryKiB: 2048, Time: 1, Threads: 1},
	} {
		h := New(now, 1)
		ctx := context.Background()
		var work uint64
		idKey = func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
			work += uint64(time) * uint64(memory)
			return argon2.IDKey(password, salt, time, memory, threads, keyLen)
		}
		t.Cleanup(func() { idKey = argon2.IDKey })
		if err := h.Burn(ctx, "a guess"); err != nil {
			t.Fatal(err)
		}
		burn := work
		work = 0
		for _, pw := range []string{"a guess", "pw"} {
			ok, rehash, err := h.Verify(ctx, pw, hashWithSalt("pw", fixedSalt, old))
			if err != nil || ok != (pw == "pw") || rehash != ok {
				t.Fatalf("Verify(%q) of an old hash: ok %v rehash %v %v", pw, ok, rehash, err)
			}
			if work != burn {
				t.Errorf("with %+v, verifying %q at a hash of %+v spent %d KiB×passes of argon2id, an unknown login's burn %d: the time tells the login exists", now, pw, old, work, burn)
			}
			work = 0
		}
	}
}
