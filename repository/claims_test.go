//go:build integration

package repository_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/repository"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var seq atomic.Int64

func key(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), seq.Add(1))
}

// newClaims returns a claim store on the package keyspace with a DB of its
// own, which a test may decorate (faultinject.Install).
func newClaims(t *testing.T) (*repository.Claims, *repository.DB) {
	t.Helper()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	return repository.NewClaims(db), db
}

func TestClaimLifecycle(t *testing.T) {
	t.Parallel()
	c, _ := newClaims(t)
	ctx := context.Background()
	k := key("life")
	got, err := c.Claim(ctx, domain.KindUsername, k, "u_a", "op1", 0, time.Minute)
	if err != nil || got.Owner != "u_a" || got.Op != "op1" || got.State != domain.ClaimPending {
		t.Fatalf("first claim: %+v %v", got, err)
	}
	// A retry of the same operation finds its own claim.
	if got, err := c.Claim(ctx, domain.KindUsername, k, "u_a", "op1", 0, time.Minute); err != nil || got.Owner != "u_a" || got.Op != "op1" {
		t.Fatalf("retry: %+v %v", got, err)
	}
	// Someone else finds it taken, and cannot commit or release it.
	if got, err := c.Claim(ctx, domain.KindUsername, k, "u_b", "op2", 0, time.Minute); err != nil || got.Owner != "u_a" {
		t.Fatalf("other claimant: %+v %v", got, err)
	}
	if ok, err := c.Commit(ctx, domain.KindUsername, k, "u_b", "op2", 0); err != nil || ok {
		t.Fatalf("foreign commit applied=%v err=%v", ok, err)
	}
	if err := c.Release(ctx, domain.KindUsername, k, "u_a", "op-other"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Lookup(ctx, domain.KindUsername, k); got.Owner != "u_a" {
		t.Fatalf("a release by another operation of the same user deleted the claim: %+v", got)
	}
	if ok, err := c.Commit(ctx, domain.KindUsername, k, "u_a", "op1", 0); err != nil || !ok {
		t.Fatalf("commit applied=%v err=%v", ok, err)
	}
	if got, _ := c.Lookup(ctx, domain.KindUsername, k); got.State != domain.ClaimCommitted {
		t.Fatalf("after commit: %+v", got)
	}
	if err := c.Release(ctx, domain.KindUsername, k, "u_a", "op1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup(ctx, domain.KindUsername, k); err != domain.ErrNotFound {
		t.Fatalf("after release: %v", err)
	}
}

func TestPendingClaimExpiresCommittedDoesNot(t *testing.T) {
	t.Parallel()
	c, _ := newClaims(t)
	ctx := context.Background()
	pending, committed := key("exp"), key("exp")
	// The lease leaves the commit time to land on a busy node (a 1 s lease
	// ran out before the commit on a loaded two-core machine).
	const lease = 4 * time.Second
	for _, k := range []string{pending, committed} {
		if _, err := c.Claim(ctx, domain.KindEmail, k, "u_a", "op", 0, lease); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := c.Commit(ctx, domain.KindEmail, committed, "u_a", "op", 0); !ok || err != nil {
		t.Fatalf("commit %v %v", ok, err)
	}
	time.Sleep(lease + 1500*time.Millisecond)
	if _, err := c.Lookup(ctx, domain.KindEmail, pending); err != domain.ErrNotFound {
		t.Fatalf("pending claim outlived its lease: %v", err)
	}
	if got, err := c.Lookup(ctx, domain.KindEmail, committed); err != nil || got.Owner != "u_a" || got.State != domain.ClaimCommitted {
		t.Fatalf("committed claim expired: %+v %v", got, err)
	}
}

func TestTakeoverOnlyOfTheDeadClaim(t *testing.T) {
	t.Parallel()
	c, _ := newClaims(t)
	ctx := context.Background()
	k := key("take")
	c.Claim(ctx, domain.KindUsername, k, "u_dead", "op0", 0, time.Minute)
	c.Commit(ctx, domain.KindUsername, k, "u_dead", "op0", 0)
	dead, _ := c.Lookup(ctx, domain.KindUsername, k)
	stale := dead
	stale.Op = "some-other-op"
	if ok, err := c.Takeover(ctx, domain.KindUsername, k, stale, "u_new", "op1", 0, time.Minute); err != nil || ok {
		t.Fatalf("takeover of a claim that is not the one found dead: %v %v", ok, err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := c.Takeover(ctx, domain.KindUsername, k, dead, fmt.Sprintf("u_new%d", i), "op", 0, time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d takeovers applied, want 1", wins.Load())
	}
}

// TestLostAnswersAreResolved: each operation's answer is lost after it
// applied, or it times out before being sent; the store reads back at
// SERIAL and reports what really happened (U5).
func TestLostAnswersAreResolved(t *testing.T) {
	t.Parallel()
	c, db := newClaims(t)
	faults := faultinject.Install(db)
	ctx := context.Background()
	lost := &gocql.RequestErrCASWriteUnknown{}
	for _, at := range []faultinject.Point{faultinject.AfterLWT, faultinject.BeforeLWT} {
		fault := func(stmt string) {
			var once sync.Once
			faults.Set(func(name string, point faultinject.Point) error {
				var err error
				if name == stmt && point == at {
					once.Do(func() { err = lost })
				}
				return err
			})
		}
		k := key("lost")
		fault("usernames.claim")
		if got, err := c.Claim(ctx, domain.KindUsername, k, "u_a", "op", 0, time.Minute); err != nil || got.Owner != "u_a" || got.Op != "op" {
			t.Fatalf("claim at %v: %+v %v", at, got, err)
		}
		fault("usernames.commit")
		if ok, err := c.Commit(ctx, domain.KindUsername, k, "u_a", "op", 0); err != nil || !ok {
			t.Fatalf("commit at %v: %v %v", at, ok, err)
		}
		fault("usernames.release")
		if err := c.Release(ctx, domain.KindUsername, k, "u_a", "op"); err != nil {
			t.Fatalf("release at %v: %v", at, err)
		}
		faults.Set(nil)
		if _, err := c.Lookup(ctx, domain.KindUsername, k); err != domain.ErrNotFound {
			t.Fatalf("after release at %v: %v", at, err)
		}
		// A lost answer on a claim someone else holds reports the holder.
		c.Claim(ctx, domain.KindUsername, k, "u_b", "opb", 0, time.Minute)
		fault("usernames.claim")
		if got, err := c.Claim(ctx, domain.KindUsername, k, "u_a", "op", 0, time.Minute); err != nil || got.Owner != "u_b" {
			t.Fatalf("contended claim at %v: %+v %v", at, got, err)
		}
		faults.Set(nil)
	}
}

// TestUnresolvableErrorsAreNotGuessed: an error that is not ambiguous (the
// node says the write was not applied) is returned as it is.
func TestUnresolvableErrorsAreNotGuessed(t *testing.T) {
	t.Parallel()
	c, db := newClaims(t)
	faults := faultinject.Install(db)
	faults.Set(func(string, faultinject.Point) error {
		return &gocql.RequestErrUnavailable{}
	})
	if _, err := c.Claim(context.Background(), domain.KindUsername, key("unav"), "u_a", "op", 0, time.Minute); err == nil {
		t.Fatal("an unavailable error was swallowed")
	}
}

// TestAdoptUnderFaults: adopting a committed claim for another operation of
// the same owner is one conditional write. Its answer lost after it
// applied, or its first attempt landing late (after the read-back, before
// the retry, whose condition then fails), it still reports adopted, read
// back by its tag; the claim stays committed, with no TTL. Adopting from an
// operation that no longer holds the claim changes nothing.
func TestAdoptUnderFaults(t *testing.T) {
	t.Parallel()
	c, db := newClaims(t)
	faults := faultinject.Install(db)
	ctx := context.Background()
	for _, fault := range []struct {
		name string
		at   faultinject.Point
		err  error
	}{
		{"answer lost after applying", faultinject.AfterLWT, &gocql.RequestErrCASWriteUnknown{}},
		{"first attempt lands late", faultinject.BeforeLWT, faultinject.ErrLandLate},
	} {
		k := key("adopt")
		if _, err := c.Claim(ctx, domain.KindUsername, k, "u_a", "op1", 3, time.Minute); err != nil {
			t.Fatal(err)
		}
		if ok, err := c.Commit(ctx, domain.KindUsername, k, "u_a", "op1", 3); err != nil || !ok {
			t.Fatalf("commit: %v %v", ok, err)
		}
		old, err := c.Lookup(ctx, domain.KindUsername, k)
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		faults.Set(func(name string, point faultinject.Point) error {
			var err error
			if name == "usernames.adopt" && point == fault.at {
				once.Do(func() { err = fault.err })
			}
			return err
		})
		ok, err := c.Adopt(ctx, domain.KindUsername, k, old, "op2", 3)
		faults.Set(nil)
		faults.WaitLate()
		if err != nil || !ok {
			t.Fatalf("%s: adopt answered %v %v", fault.name, ok, err)
		}
		got, err := c.Lookup(ctx, domain.KindUsername, k)
		if err != nil || got.Owner != "u_a" || got.Op != "op2" || got.State != domain.ClaimCommitted || got.BaseVersion != 3 {
			t.Fatalf("%s: after adopt %+v %v", fault.name, got, err)
		}
		var ttl *int
		if err := db.Session.ContextQuery(ctx, "SELECT TTL(op) FROM usernames WHERE key = ?", nil).Bind(k).GetRelease(&ttl); err != nil || ttl != nil {
			t.Fatalf("%s: the adopted claim has a TTL (%v, %v): it could expire", fault.name, ttl, err)
		}
		// The old operation no longer holds it: adopting from it is refused.
		if ok, err := c.Adopt(ctx, domain.KindUsername, k, old, "op3", 3); err != nil || ok {
			t.Fatalf("%s: stale adopt answered %v %v", fault.name, ok, err)
		}
	}
}
