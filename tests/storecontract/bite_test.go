package storecontract_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/tests/memstore"
	"shelf/tests/storecontract"
)

// The suites bite: each wrong fake below drifts from Cassandra in one
// way, and the check for that way fails on it (while passing on memstore
// as it is).

// recorder is a testing.TB that records failures instead of failing the
// test: a check run on it reports whether it would have failed.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

func (r *recorder) Helper()                         {}
func (r *recorder) Log(args ...any)                 {}
func (r *recorder) Logf(format string, args ...any) {}
func (r *recorder) Fail()                           { r.fail("Fail") }
func (r *recorder) Error(args ...any)               { r.fail(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
}
func (r *recorder) FailNow()          { r.fail("FailNow"); runtime.Goexit() }
func (r *recorder) Fatal(args ...any) { r.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

// verdict runs a check on s with a recorder (in a goroutine of its own,
// which a fatal failure ends) and returns its failures.
func verdict[S any](t *testing.T, checks []storecontract.Check[S], name string, s S, c storecontract.Clock) []string {
	t.Helper()
	for _, check := range checks {
		if check.Name == name {
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				check.Run(r, s, c)
			}()
			<-done
			return r.failures
		}
	}
	t.Fatalf("no check %s", name)
	return nil
}

func fake() (*memstore.Store, storecontract.Clock) {
	s := memstore.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	return s, storecontract.Clock{Now: s.Now, Pass: s.Advance}
}

// claimsAppliedTwice answers every claim as applied for its caller: a
// compare-and-set that applies for more than one of its racers.
type claimsAppliedTwice struct{ domain.ClaimStore }

func (c claimsAppliedTwice) Claim(ctx context.Context, kind domain.ClaimKind, key, owner, op string, base int, lease time.Duration) (domain.Claim, error) {
	got, err := c.ClaimStore.Claim(ctx, kind, key, owner, op, base, lease)
	got.Owner, got.Op = owner, op
	return got, err
}

// claimsWithoutTTL ignore the lease: pending claims never expire.
type claimsWithoutTTL struct{ domain.ClaimStore }

func (c claimsWithoutTTL) Claim(ctx context.Context, kind domain.ClaimKind, key, owner, op string, base int, _ time.Duration) (domain.Claim, error) {
	return c.ClaimStore.Claim(ctx, kind, key, owner, op, base, storecontract.Long)
}

// membersPagedAgain resume a page at the cursor's row, not after it: the
// last row of a page comes again at the top of the next.
type membersPagedAgain struct{ groups.MemberStore }

func (m membersPagedAgain) Page(ctx context.Context, groupID, after string, limit int) ([]groups.Member, error) {
	if after != "" {
		after = after[:len(after)-1]
	}
	return m.MemberStore.Page(ctx, groupID, after, limit)
}

// deleteLosesTies deletes one version early: a delete that loses a tie
// with the write it should shadow.
type deleteLosesTies struct{ library.MemberStore }

func (m deleteLosesTies) Delete(ctx context.Context, contentID, principalID string, version int) error {
	return m.MemberStore.Delete(ctx, contentID, principalID, version-1)
}

// groupsAmongAll answers every group of the user, whatever was asked: a
// read of the whole partition where one by key was meant.
type groupsAmongAll struct{ groups.MemberStore }

func (m groupsAmongAll) GroupsAmong(ctx context.Context, userID string, _ []string) ([]string, error) {
	return m.GroupsOf(ctx, userID)
}

// groupsWithUsers answers every member of the item as its groups: a
// slice whose bounds let the users in.
type groupsWithUsers struct{ library.MemberStore }

func (m groupsWithUsers) Groups(ctx context.Context, contentID string) ([]library.Member, error) {
	return m.Page(ctx, contentID, "", 1000)
}

// accessWithoutSession reads access without the password session: a
// statement that left a column out.
type accessWithoutSession struct{ storecontract.UserStore }

func (u accessWithoutSession) Access(ctx context.Context, id string) (domain.Access, error) {
	a, err := u.UserStore.Access(ctx, id)
	a.PasswordSession = ""
	return a, err
}

func TestSuitesCatchWrongFakes(t *testing.T) {
	cases := []struct {
		name         string
		right, wrong func() []string
	}{
		{"a narrow read leaves a column out", func() []string {
			s, c := fake()
			return verdict(t, storecontract.UserChecks, "NarrowReadsReadTheirColumns", storecontract.UserStore(s.Users()), c)
		}, func() []string {
			s, c := fake()
			return verdict(t, storecontract.UserChecks, "NarrowReadsReadTheirColumns", storecontract.UserStore(accessWithoutSession{s.Users()}), c)
		}},
		{"claim applied twice", func() []string {
			s, c := fake()
			return verdict(t, storecontract.ClaimChecks, "ClaimDecidedOnce", s.Claims(), c)
		}, func() []string {
			s, c := fake()
			return verdict(t, storecontract.ClaimChecks, "ClaimDecidedOnce", domain.ClaimStore(claimsAppliedTwice{s.Claims()}), c)
		}},
		{"lease never runs out", func() []string {
			s, c := fake()
			return verdict(t, storecontract.ClaimChecks, "LeaseRunsOut", s.Claims(), c)
		}, func() []string {
			s, c := fake()
			return verdict(t, storecontract.ClaimChecks, "LeaseRunsOut", domain.ClaimStore(claimsWithoutTTL{s.Claims()}), c)
		}},
		{"page repeats a row", func() []string {
			s, c := fake()
			return verdict(t, storecontract.GroupMemberChecks, "PagesInIDOrder", s.GroupMembers(), c)
		}, func() []string {
			s, c := fake()
			return verdict(t, storecontract.GroupMemberChecks, "PagesInIDOrder", groups.MemberStore(membersPagedAgain{s.GroupMembers()}), c)
		}},
		{"delete loses a tie", func() []string {
			s, c := fake()
			return verdict(t, storecontract.ContentMemberChecks, "FollowTheNewestVersion", s.Contents().Members, c)
		}, func() []string {
			s, c := fake()
			return verdict(t, storecontract.ContentMemberChecks, "FollowTheNewestVersion", library.MemberStore(deleteLosesTies{s.Contents().Members}), c)
		}},
		{"groups among reads the whole partition", func() []string {
			s, c := fake()
			return verdict(t, storecontract.GroupMemberChecks, "GroupsAmongReadsOnlyThoseAsked", s.GroupMembers(), c)
		}, func() []string {
			s, c := fake()
			return verdict(t, storecontract.GroupMemberChecks, "GroupsAmongReadsOnlyThoseAsked", groups.MemberStore(groupsAmongAll{s.GroupMembers()}), c)
		}},
		{"an item's groups let its users in", func() []string {
			s, c := fake()
			return verdict(t, storecontract.ContentMemberChecks, "GroupsAreTheGroupMembers", s.Contents().Members, c)
		}, func() []string {
			s, c := fake()
			return verdict(t, storecontract.ContentMemberChecks, "GroupsAreTheGroupMembers", library.MemberStore(groupsWithUsers{s.Contents().Members}), c)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if failures := c.right(); len(failures) != 0 {
				t.Fatalf("the check fails on memstore itself: %v", failures)
			}
			failures := c.wrong()
			if len(failures) == 0 {
				t.Fatal("the check passed a wrong fake")
			}
			t.Logf("the wrong fake failed: %s", failures[0])
		})
	}
}
