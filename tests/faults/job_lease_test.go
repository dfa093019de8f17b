package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
)

// timedMembers is the member tables where each removal takes step of the
// store's clock once slow is set (a node answering in its usual time,
// many times over), and probe runs before removal number probeAt.
type timedMembers struct {
	groups.MemberStore
	w       *world
	slow    bool
	step    time.Duration
	removed int
	probeAt int
	probe   func()
}

func (m *timedMembers) Apply(ctx context.Context, groupID string, c groups.MemberChange, version int) error {
	if m.slow && c.Role == "" {
		m.removed++
		if m.removed == m.probeAt {
			m.probe()
		}
		m.w.store.Advance(m.step)
	}
	return m.MemberStore.Apply(ctx, groupID, c, version)
}

// TestAWorkerKeepsItsLeaseThroughAClosingsMembers: ann closes her club of
// 151 members; worker a runs the closing's job, each member removal
// taking 250 ms, so a page of 100 takes 25 s, within the job's lease
// (30 s), and the whole removal 38 s, past it. Worker b, another
// process, runs a pass at the 130th removal. A worker that is working
// renews its lease with every page (docs/design/jobs.md, "Fenced"), so b
// must find the job held; a job whose live worker goes silent past its
// lease is taken over by every process in turn, each running the same
// closing at once, each stuck on it while every other job waits.
func TestAWorkerKeepsItsLeaseThroughAClosingsMembers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	if err := w.signup("ann", "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	ann := w.created[0]
	members, grp, life := timedLife(w)
	club, err := grp.CreateGroup(ctx, as(ann), groups.CreateInput{Name: "club"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		name := fmt.Sprintf("m%03d", i)
		if err := w.signup(name, name+"@example.org"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := grp.SetMember(ctx, as(ann), club.ID, w.created[len(w.created)-1].ID, groups.RoleMember, nil); err != nil {
			t.Fatal(err)
		}
	}
	job, err := life.CloseGroup(ctx, as(ann), club.ID, ownersProof())
	if err != nil {
		t.Fatal(err)
	}
	members.workWhileProbing(t, w, life, job, "the closing's job", "removing its members")
}

// TestAWorkerKeepsItsLeaseThroughADeletionsGroups: ann, a member of 150
// of bob's groups, deletes her account; worker a runs the deletion's job,
// each removal from a group taking 250 ms: 25 s for 100 groups, within
// the job's lease (30 s), 38 s for all of them, past it. Worker b,
// another process, runs a pass at the 130th removal: the job must be
// held, as in TestAWorkerKeepsItsLeaseThroughAClosingsMembers, since a
// user may be in any number of groups.
func TestAWorkerKeepsItsLeaseThroughADeletionsGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	users := w.signupAll(t, "ann", "bob")
	ann, bob := users[0], users[1]
	members, grp, life := timedLife(w)
	for i := range 150 {
		gr, err := grp.CreateGroup(ctx, as(bob), groups.CreateInput{Name: fmt.Sprintf("g%03d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := grp.SetMember(ctx, as(bob), gr.ID, ann.ID, groups.RoleMember, nil); err != nil {
			t.Fatal(err)
		}
	}
	job, err := life.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	members.workWhileProbing(t, w, life, job, "the deletion's job", "leaving ann's groups")
}

// TestAWorkerKeepsADeletionsLeaseThroughAClosingItFinishes: bob closes
// his club of 151 members, ann among them, and ann deletes her account
// before any worker ran the closing's job. Worker a's pass takes ann's
// deletion first; its groups step finds the club closing and finishes
// that closing itself (finishClosingOf), each member removal taking
// 250 ms: 38 s in all, past the deletion's lease (30 s), though every
// page renews the closing's. Worker b, another process, runs a pass at
// the 130th removal: the deletion's job must be held, as in
// TestAWorkerKeepsItsLeaseThroughADeletionsGroups. A deletion that goes
// silent while it finishes a closing is taken over by every process in
// turn, each failing on the closing a holds (closing_held) and marking
// the job as retrying, and a's own run ends lost once the closing is
// done.
func TestAWorkerKeepsADeletionsLeaseThroughAClosingItFinishes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	users := w.signupAll(t, "ann", "bob")
	ann, bob := users[0], users[1]
	members, grp, life := timedLife(w)
	club, err := grp.CreateGroup(ctx, as(bob), groups.CreateInput{Name: "club"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		id := ann.ID
		if i > 0 {
			name := fmt.Sprintf("m%03d", i)
			if err := w.signup(name, name+"@example.org"); err != nil {
				t.Fatal(err)
			}
			id = w.created[len(w.created)-1].ID
		}
		if _, _, err := grp.SetMember(ctx, as(bob), club.ID, id, groups.RoleMember, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := life.CloseGroup(ctx, as(bob), club.ID, ownersProof()); err != nil {
		t.Fatal(err)
	}
	job, err := life.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	members.workWhileProbing(t, w, life, job, "the deletion's job", "finishing the closing of a group of ann's")
}

// timedPages is the member tables where each page of a group's members
// read takes step of the store's clock once slow is set, and probe runs
// before page read number probeAt.
type timedPages struct {
	groups.MemberStore
	w       *world
	slow    bool
	step    time.Duration
	pages   int
	probeAt int
	probe   func()
}

func (m *timedPages) Page(ctx context.Context, groupID, after string, limit int) ([]groups.Member, error) {
	if m.slow {
		m.pages++
		if m.pages == m.probeAt {
			m.probe()
		}
		m.w.store.Advance(m.step)
	}
	return m.MemberStore.Page(ctx, groupID, after, limit)
}

// TestAWorkerKeepsADeletionsLeaseThroughAHandOversPages: ann deletes her
// account while she is the last manager of her club, whose 300 other
// members are all suspended. Worker a runs the deletion's job; its
// hand-over reads the members a page of 100 at a time, looking for an
// active one, each page (with the accounts on it) taking 12 s. Worker b,
// another process, runs a pass before the fourth page, 36 s after a's
// last report: the deletion's job must be held, as in
// TestAWorkerKeepsItsLeaseThroughADeletionsGroups (a group may have
// 100 000 members). A hand-over that goes silent past the lease while it
// pages is taken over by every process in turn, each paging the same
// members.
func TestAWorkerKeepsADeletionsLeaseThroughAHandOversPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, ann, root := annAndRoot(t)
	members := &timedPages{MemberStore: w.store.GroupMembers(), w: w, step: 12 * time.Second, probeAt: 4}
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), groupRows(w.store), members, nopLog{})
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: w.store.Now, Background: atOnce},
		w.svc, w.store.Users(), grp, w.store.Contents(), nopLog{})
	mod := worldModeration(w)
	life := lifecycle.New(lifecycle.Config{Now: w.store.Now, Worker: "a"}, w.svc, mod, grp, lib, lifecycle.Stores{
		Jobs: w.store.Jobs(), Deletions: w.store.Deletions(), Closings: w.store.Closings(),
	})
	club, err := grp.CreateGroup(ctx, as(ann), groups.CreateInput{Name: "club"})
	if err != nil {
		t.Fatal(err)
	}
	until := w.store.Now().Add(24 * time.Hour)
	for i := range 300 {
		name := fmt.Sprintf("m%03d", i)
		if err := w.signup(name, name+"@example.org"); err != nil {
			t.Fatal(err)
		}
		id := w.created[len(w.created)-1].ID
		if _, _, err := grp.SetMember(ctx, as(ann), club.ID, id, groups.RoleMember, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := mod.Suspend(ctx, domain.Principal{UserID: root.ID}, id, moderation.SuspendInput{Reason: "spam", Until: &until}); err != nil {
			t.Fatal(err)
		}
	}
	job, err := life.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	var taken error
	members.probe = func() {
		_, taken = jobs.Acquire(ctx, w.store.Jobs(), w.store.Now, lifecycle.DefaultJobLease, job, "b")
	}
	members.slow = true
	if _, err := life.WorkJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if members.pages < members.probeAt {
		t.Fatalf("the hand-over read %d pages of members; the probe was at %d", members.pages, members.probeAt)
	}
	if !errors.Is(taken, jobs.ErrHeld) {
		t.Errorf("worker b took the deletion's job (%v) while worker a was paging the club's members for its hand-over, %d s after a's last report; want it held",
			taken, int(members.step*time.Duration(members.probeAt-1)/time.Second))
	}
}

// timedLife is w's groups and jobs on timedMembers (a removal 250 ms once
// slow, the probe at the 130th), run by worker "a".
func timedLife(w *world) (*timedMembers, *groups.Service, *lifecycle.Service) {
	members := &timedMembers{MemberStore: w.store.GroupMembers(), w: w, step: 250 * time.Millisecond, probeAt: 130}
	grp, life := lifeOver(w, members)
	return members, grp, life
}

// lifeOver is the groups and lifecycle of w (worker a) over the member
// tables members.
func lifeOver(w *world, members groups.MemberStore) (*groups.Service, *lifecycle.Service) {
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), groupRows(w.store), members, nopLog{})
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: w.store.Now, Background: atOnce},
		w.svc, w.store.Users(), grp, w.store.Contents(), nopLog{})
	life := lifecycle.New(lifecycle.Config{Now: w.store.Now, Worker: "a"}, w.svc, worldModeration(w), grp, lib, lifecycle.Stores{
		Jobs: w.store.Jobs(), Deletions: w.store.Deletions(), Closings: w.store.Closings(),
	})
	return grp, life
}

// workWhileProbing has worker a run job with every removal slow, worker b
// trying to take the job at the probe's removal: b must find it held
// (what: the job; doing: what a was doing then).
func (m *timedMembers) workWhileProbing(t *testing.T, w *world, life *lifecycle.Service, job jobs.Job, what, doing string) {
	t.Helper()
	ctx := context.Background()
	var taken error
	m.probe = func() {
		_, taken = jobs.Acquire(ctx, w.store.Jobs(), w.store.Now, lifecycle.DefaultJobLease, job, "b")
	}
	m.slow = true
	if _, err := life.WorkJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if m.removed < m.probeAt {
		t.Fatalf("%s removed %d members; the probe was at %d", what, m.removed, m.probeAt)
	}
	if !errors.Is(taken, jobs.ErrHeld) {
		t.Errorf("worker b took %s (%v) while worker a was %s, %d s after a's last report; want it held",
			what, taken, doing, int(m.step*time.Duration(m.probeAt)/time.Second))
	}
}

// timedSessions is the sessions' store where each session's revocation
// takes step of the store's clock once slow is set, and probe runs
// before revocation number probeAt. DeleteAll revokes each through
// Delete, as the repository's does (sixteen at once there; one after
// another here, the time they take summed).
type timedSessions struct {
	accounts.SessionStore
	w       *world
	slow    bool
	step    time.Duration
	revoked int
	probeAt int
	probe   func()
}

func (s *timedSessions) Delete(ctx context.Context, sess domain.Session) error {
	if s.slow {
		s.revoked++
		if s.revoked == s.probeAt {
			s.probe()
		}
		s.w.store.Advance(s.step)
	}
	return s.SessionStore.Delete(ctx, sess)
}

func (s *timedSessions) DeleteAll(ctx context.Context, userID, keep string) error {
	entries, err := s.Entries(ctx, userID)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.TokenHash != keep {
			errs = append(errs, s.Delete(ctx, e))
		}
	}
	return errors.Join(errs...)
}

// TestAWorkerKeepsADeletionsLeaseThroughItsSessions: ann signed in 150
// times (a session a login, each living for days; a thief with her
// password can add more from many addresses) and deletes her account;
// worker a runs the deletion's job, each session's revocation taking
// 250 ms: 38 s for all of them, past the job's lease (30 s). Worker b,
// another process, runs a pass at the 130th revocation, 32 s after a's
// last report: the job must be held, as in
// TestAWorkerKeepsItsLeaseThroughADeletionsGroups. Ending the sessions
// in one call reported nothing to the lease however many there were, so
// b took the job over and ran every step of the deletion again beside a,
// and a's finish failed.
func TestAWorkerKeepsADeletionsLeaseThroughItsSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	if err := w.signup("ann", "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	ann := w.created[0]
	sessions := &timedSessions{SessionStore: w.store.Sessions(), w: w, step: 250 * time.Millisecond, probeAt: 130}
	w.svc = accounts.New(w.cfg, w.store.Claims(), w.rows, sessions, plainHasher{}, nopLog{})
	for i := range 150 {
		if _, err := w.svc.Login(ctx, "ann", password, accounts.Client{}); err != nil {
			t.Fatalf("login %d: %v", i+1, err)
		}
	}
	wireDeletion(w)
	job, err := w.life.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	var taken error
	sessions.probe = func() {
		_, taken = jobs.Acquire(ctx, w.store.Jobs(), w.store.Now, lifecycle.DefaultJobLease, job, "b")
	}
	sessions.slow = true
	if _, err := w.life.WorkJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if sessions.revoked < sessions.probeAt {
		t.Fatalf("the deletion revoked %d sessions; the probe was at %d", sessions.revoked, sessions.probeAt)
	}
	if !errors.Is(taken, jobs.ErrHeld) {
		t.Errorf("worker b took the deletion's job (%v) while worker a was ending ann's sessions, %d s after a's last report; want it held",
			taken, int(sessions.step*time.Duration(sessions.probeAt)/time.Second))
	}
	if got, err := w.store.Jobs().Get(ctx, job.ID); err != nil || got.State(w.store.Now()) != jobs.Finished {
		t.Errorf("the job after a's pass: %+v %v; want it finished", got, err)
	}
}

// takenOverMembers is the member tables where the first removal finds
// the job's lease run out and taken over by another worker (takeOver),
// and then fails (the node timed out).
type takenOverMembers struct {
	groups.MemberStore
	takeOver func()
	struck   bool
}

func (m *takenOverMembers) Apply(ctx context.Context, groupID string, c groups.MemberChange, version int) error {
	if c.Role == "" && !m.struck {
		m.struck = true
		m.takeOver()
		return errors.New("the node timed out")
	}
	return m.MemberStore.Apply(ctx, groupID, c, version)
}

// TestADeletionWhoseClosingFailedAfterItsTakeOverIsToldAsFailed: bob
// closes his club, ann among its members, and ann deletes her account;
// worker a's pass runs her deletion, which finishes the club's closing
// inside its own run. The closing runs past its lease, worker b takes
// the closing's job over, and a's removal of a member fails. Letting the
// closing's lease go then answered that it was lost, and a joined that
// answer to the removal's failure: the deletion took its own lease for
// lost too, kept it without a word of the failure, and the pass counted
// the job as held, not failed (no retrying shown, every other worker
// waiting out the lease). The closing's lease lost is b's affair; the
// deletion's run failed, and its row says so.
func TestADeletionWhoseClosingFailedAfterItsTakeOverIsToldAsFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	users := w.signupAll(t, "ann", "bob")
	ann, bob := users[0], users[1]
	members := &takenOverMembers{MemberStore: w.store.GroupMembers()}
	grp, life := lifeOver(w, members)
	club, err := grp.CreateGroup(ctx, as(bob), groups.CreateInput{Name: "club"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := grp.SetMember(ctx, as(bob), club.ID, ann.ID, groups.RoleMember, nil); err != nil {
		t.Fatal(err)
	}
	closing, err := life.CloseGroup(ctx, as(bob), club.ID, ownersProof())
	if err != nil {
		t.Fatal(err)
	}
	deletion, err := life.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	var taken error
	members.takeOver = func() {
		w.store.Advance(lifecycle.DefaultJobLease + time.Second)
		_, taken = jobs.Acquire(ctx, w.store.Jobs(), w.store.Now, lifecycle.DefaultJobLease, closing, "b")
	}
	_, _ = life.WorkJobs(ctx)
	if !members.struck || taken != nil {
		t.Fatalf("the take-over of the closing did not happen (struck %v, b's acquire %v)", members.struck, taken)
	}
	row, err := w.store.Jobs().GetSerial(ctx, deletion.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !row.Retrying() || row.Owner != "" {
		t.Errorf("the deletion's job after its run failed: owner %q until %v, last error %q; want it let go, its failure recorded",
			row.Owner, row.LeaseUntil, row.LastError)
	}
}
