package storecontract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/library"
)

// Contents runs ContentChecks.
func Contents(t *testing.T, open Open[library.ContentStore]) { Run(t, open, ContentChecks) }

// ContentChecks are library.ContentStore's contract.
var ContentChecks = []Check[library.ContentStore]{
	{"UpdateDecidedOnce", contentUpdateDecidedOnce},
	{"ClearPendingAtItsVersion", contentClearPending},
	{"PlacingKeptWithItsVersion", contentPlacing},
	{"StatesReadARecordedRemoval", contentStatesRemoval},
	{"FencedBeforeKeptByEveryWrite", contentFencedBefore},
	{"PendingShareNamesItsCaller", contentPendingAsker},
	{"TakenBackKeptByEveryWrite", contentTakenBack},
	{"VouchedShareIsNotTakenBackToItsPrior", contentVouch},
	{"TakeBackOnlyWhilePending", contentTakeBackWhilePending},
}

func newContent(c Clock) library.Content {
	now := At(c.Now())
	return library.Content{ID: Key("item"), Name: "item", Visibility: library.VisibilityPrivate, CreatedBy: "u",
		CreatedAt: now, LastModified: now, Members: 1, Managers: 1, Version: 1}
}

// contentUpdateDecidedOnce: a second create of an id does not apply; of
// racers writing version 2 exactly one applies and the row holds its
// write; a second write of version 2 does not apply.
func contentUpdateDecidedOnce(t testing.TB, s library.ContentStore, c Clock) {
	ctx, item := context.Background(), newContent(c)
	if ok, err := s.Create(ctx, item); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	if ok, err := s.Create(ctx, item); err != nil || ok {
		t.Fatalf("a second create of the id: applied=%v err=%v", ok, err)
	}
	winner := race(t, "update", func(i int) (bool, error) {
		u := item
		u.Name, u.Version = fmt.Sprintf("racer%d", i), 2
		return s.Update(ctx, u)
	})
	name := fmt.Sprintf("racer%d", winner)
	for _, read := range []func(context.Context, string) (library.Content, error){s.Get, s.GetSerial} {
		if got, err := read(ctx, item.ID); err != nil || got.Name != name || got.Version != 2 {
			t.Fatalf("after the race: %+v %v, want %s's write", got, err, name)
		}
	}
	again := item
	again.Name, again.Version = "again", 2
	if ok, err := s.Update(ctx, again); err != nil || ok {
		t.Fatalf("a second update of version 1: applied=%v err=%v", ok, err)
	}
	missing := Key("missing")
	states, err := s.States(ctx, []string{item.ID, missing})
	if err != nil || len(states) != 1 || states[item.ID].Name != name || states[item.ID].Visibility != library.VisibilityPrivate {
		t.Fatalf("states: %+v %v, want the item alone, as the winner wrote it", states, err)
	}
	if _, err := s.Get(ctx, missing); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("get of no item: %v, want ErrNotFound", err)
	}
}

// contentFencedBefore: the time a fence records reads back as written
// (to the millisecond), both ways, and stays through the writes after it:
// an update that carries it and a clear (library.Service.fence).
func contentFencedBefore(t testing.TB, s library.ContentStore, c Clock) {
	ctx, item := context.Background(), newContent(c)
	item.Pending = &library.MemberChange{PrincipalID: "p"}
	if ok, err := s.Create(ctx, item); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	if got, err := s.Get(ctx, item.ID); err != nil || !got.FencedBefore.IsZero() {
		t.Fatalf("a new item reads %+v %v, want no fence recorded", got, err)
	}
	fenced := item
	fenced.Version, fenced.FencedBefore = 2, At(c.Now()).Add(-time.Second)
	if ok, err := s.Update(ctx, fenced); err != nil || !ok {
		t.Fatalf("the fence: %v %v", ok, err)
	}
	if ok, err := s.ClearPending(ctx, fenced); err != nil || !ok {
		t.Fatalf("clear: %v %v", ok, err)
	}
	for _, read := range []func(context.Context, string) (library.Content, error){s.Get, s.GetSerial} {
		if got, err := read(ctx, item.ID); err != nil || !got.FencedBefore.Equal(fenced.FencedBefore) {
			t.Fatalf("after the fence and a clear: %+v %v, want fenced before %v", got, err, fenced.FencedBefore)
		}
	}
}

// contentTakenBack: the version of a share taken back, recorded by the
// take-back's compare-and-set, reads back both ways and stays through the
// writes after it: a clear and an update that carries it
// (library.Service.shareStood).
func contentTakenBack(t testing.TB, s library.ContentStore, c Clock) {
	ctx, item := context.Background(), newContent(c)
	if ok, err := s.Create(ctx, item); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	if got, err := s.GetSerial(ctx, item.ID); err != nil || got.TakenBack != 0 {
		t.Fatalf("a new item reads %+v %v, want no share taken back", got, err)
	}
	share := item
	share.Version = 2
	share.Pending = &library.MemberChange{PrincipalID: "p", Role: library.RoleManager, AskedBy: "u", Through: "g"}
	if ok, err := s.Update(ctx, share); err != nil || !ok {
		t.Fatalf("the share: %v %v", ok, err)
	}
	back := share
	back.Version, back.TakenBack = 3, 2
	back.Pending = &library.MemberChange{PrincipalID: "p"}
	if ok, err := s.TakeBack(ctx, back, "p", ""); err != nil || !ok {
		t.Fatalf("the take-back: %v %v", ok, err)
	}
	if ok, err := s.ClearPending(ctx, back); err != nil || !ok {
		t.Fatalf("clear: %v %v", ok, err)
	}
	later := back
	later.Version, later.Pending, later.Name = 4, nil, "later"
	if ok, err := s.Update(ctx, later); err != nil || !ok {
		t.Fatalf("a later update: %v %v", ok, err)
	}
	for _, read := range []func(context.Context, string) (library.Content, error){s.Get, s.GetSerial} {
		if got, err := read(ctx, item.ID); err != nil || got.TakenBack != 2 {
			t.Fatalf("after the take-back, a clear and an update: %+v %v, want the share at 2 taken back", got, err)
		}
	}
}

// contentVouch: a vouch applies only to the share pending at its
// version and still naming its caller, and leaves it pending, naming
// nobody, at that version; a take-back conditioned on its caller then
// does not apply, and one that is not still does
// (library.Service.vouch).
func contentVouch(t testing.TB, s library.ContentStore, c Clock) {
	ctx, item := context.Background(), newContent(c)
	if ok, err := s.Create(ctx, item); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	share := item
	share.Version = 2
	share.Pending = &library.MemberChange{PrincipalID: "p", Role: library.RoleManager, AskedBy: "u", Through: "g", PriorRole: library.RoleViewer}
	if ok, err := s.Update(ctx, share); err != nil || !ok {
		t.Fatalf("the share: %v %v", ok, err)
	}
	other := share
	other.Pending = &library.MemberChange{PrincipalID: "p", Role: library.RoleManager, AskedBy: "v", Through: "g"}
	if ok, err := s.Vouch(ctx, other); err != nil || ok {
		t.Fatalf("a vouch naming another caller: %v %v, want not applied", ok, err)
	}
	if ok, err := s.Vouch(ctx, share); err != nil || !ok {
		t.Fatalf("the vouch: %v %v", ok, err)
	}
	for _, read := range []func(context.Context, string) (library.Content, error){s.Get, s.GetSerial} {
		got, err := read(ctx, item.ID)
		if want := (library.MemberChange{PrincipalID: "p", Role: library.RoleManager}); err != nil || got.Version != 2 || got.Pending == nil || *got.Pending != want {
			t.Fatalf("the vouched share read back as %+v at %d %v, want %+v at 2", got.Pending, got.Version, err, want)
		}
	}
	back := share
	back.Version, back.TakenBack = 3, 2
	back.Pending = &library.MemberChange{PrincipalID: "p", Role: library.RoleViewer}
	if ok, err := s.TakeBack(ctx, back, "p", "u"); err != nil || ok {
		t.Fatalf("a take-back of the vouched share on its caller: %v %v, want not applied", ok, err)
	}
	if ok, err := s.TakeBack(ctx, back, "p", ""); err != nil || !ok {
		t.Fatalf("a take-back of the vouched share not on its caller: %v %v, want applied", ok, err)
	}
	if ok, err := s.Vouch(ctx, share); err != nil || ok {
		t.Fatalf("a vouch once the row moved on: %v %v, want not applied", ok, err)
	}
}

// contentPendingAsker: a share recorded by a caller who managed the item
// through a group reads back naming the caller, the group and the
// principal's role before, both ways, until it is cleared; a change
// recorded after names nobody (library.Service.outOfTheGroup).
func contentPendingAsker(t testing.TB, s library.ContentStore, c Clock) {
	ctx, item := context.Background(), newContent(c)
	if ok, err := s.Create(ctx, item); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	share := item
	share.Version = 2
	share.Pending = &library.MemberChange{PrincipalID: "p", Role: library.RoleManager, AskedBy: "u", Through: "g", PriorRole: library.RoleViewer}
	if ok, err := s.Update(ctx, share); err != nil || !ok {
		t.Fatalf("the share: %v %v", ok, err)
	}
	for _, read := range []func(context.Context, string) (library.Content, error){s.Get, s.GetSerial} {
		if got, err := read(ctx, item.ID); err != nil || got.Pending == nil || *got.Pending != *share.Pending {
			t.Fatalf("the share read back as %+v %v, want %+v", got.Pending, err, share.Pending)
		}
	}
	if ok, err := s.ClearPending(ctx, share); err != nil || !ok {
		t.Fatalf("clear: %v %v", ok, err)
	}
	removal := share
	removal.Version = 3
	removal.Pending = &library.MemberChange{PrincipalID: "p"}
	for i, want := range []*library.MemberChange{nil, removal.Pending} {
		if i == 1 {
			if ok, err := s.Update(ctx, removal); err != nil || !ok {
				t.Fatalf("the removal: %v %v", ok, err)
			}
		}
		if got, err := s.GetSerial(ctx, item.ID); err != nil || (got.Pending == nil) != (want == nil) || (want != nil && *got.Pending != *want) {
			t.Fatalf("read back as %+v %v, want %+v", got.Pending, err, want)
		}
	}
}

// contentTakeBackWhilePending: a take-back of a share applies only while
// the share is pending at the version that recorded it; once cleared
// (the version left as it was), or another principal's, it does not.
func contentTakeBackWhilePending(t testing.TB, s library.ContentStore, c Clock) {
	ctx, item := context.Background(), newContent(c)
	if ok, err := s.Create(ctx, item); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	share := item
	share.Version, share.Members = 2, 2
	share.Pending = &library.MemberChange{PrincipalID: "p", Role: library.RoleViewer, AskedBy: "u", Through: "g"}
	if ok, err := s.Update(ctx, share); err != nil || !ok {
		t.Fatalf("the share: %v %v", ok, err)
	}
	back := share
	back.Version, back.Members = 3, 1
	back.Pending = &library.MemberChange{PrincipalID: "p"}
	if ok, err := s.TakeBack(ctx, back, "q", ""); err != nil || ok {
		t.Fatalf("a take-back of another principal's share: applied=%v err=%v", ok, err)
	}
	if ok, err := s.ClearPending(ctx, share); err != nil || !ok {
		t.Fatalf("clear: %v %v", ok, err)
	}
	if ok, err := s.TakeBack(ctx, back, "p", ""); err != nil || ok {
		t.Fatalf("a take-back of a cleared share: applied=%v err=%v", ok, err)
	}
	if got, err := s.GetSerial(ctx, item.ID); err != nil || got.Version != 2 || got.Members != 2 || got.Pending != nil {
		t.Fatalf("after the take-back of a cleared share: %+v %v, want version 2 cleared", got, err)
	}
	again := share
	again.Version = 3
	if ok, err := s.Update(ctx, again); err != nil || !ok {
		t.Fatalf("the share again: %v %v", ok, err)
	}
	back.Version = 4
	if ok, err := s.TakeBack(ctx, back, "p", ""); err != nil || !ok {
		t.Fatalf("a take-back of a pending share: applied=%v err=%v", ok, err)
	}
	if got, err := s.GetSerial(ctx, item.ID); err != nil || got.Version != 4 || got.Members != 1 || got.Pending == nil || got.Pending.Role != "" {
		t.Fatalf("after the take-back: %+v %v, want version 4 recording the removal", got, err)
	}
}

// contentStatesRemoval: an item's state names the principal whose
// removal it records, until it is cleared; a share pending names nobody.
func contentStatesRemoval(t testing.TB, s library.ContentStore, c Clock) {
	ctx := context.Background()
	removal, share := newContent(c), newContent(c)
	removal.Pending = &library.MemberChange{PrincipalID: "p"}
	share.Pending = &library.MemberChange{PrincipalID: "p", Role: library.RoleViewer}
	for _, item := range []library.Content{removal, share} {
		if ok, err := s.Create(ctx, item); err != nil || !ok {
			t.Fatalf("create: %v %v", ok, err)
		}
	}
	states, err := s.States(ctx, []string{removal.ID, share.ID})
	if err != nil || states[removal.ID].Removing != "p" || states[share.ID].Removing != "" {
		t.Fatalf("states: %+v %v, want p's removal read from the first item alone", states, err)
	}
	if ok, err := s.ClearPending(ctx, removal); err != nil || !ok {
		t.Fatalf("clear: applied=%v err=%v", ok, err)
	}
	if states, err = s.States(ctx, []string{removal.ID}); err != nil || states[removal.ID].Removing != "" {
		t.Fatalf("states after the clear: %+v %v, want no removal", states, err)
	}
}

// contentPlacing: an update recorded with a provisional place reads so,
// both ways, and the one that places it reads placed.
func contentPlacing(t testing.TB, s library.ContentStore, c Clock) {
	ctx, item := context.Background(), newContent(c)
	if ok, err := s.Create(ctx, item); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	for i, placing := range []bool{true, false} {
		u := item
		u.Version, u.Placing, u.LastModified = 2+i, placing, item.LastModified.Add(time.Duration(1+i)*time.Millisecond)
		if ok, err := s.Update(ctx, u); err != nil || !ok {
			t.Fatalf("update to version %d: %v %v", u.Version, ok, err)
		}
		for _, read := range []func(context.Context, string) (library.Content, error){s.Get, s.GetSerial} {
			if got, err := read(ctx, item.ID); err != nil || got.Placing != placing || !got.LastModified.Equal(u.LastModified) {
				t.Fatalf("version %d read back as %+v %v; want placing %v", u.Version, got, err, placing)
			}
		}
	}
}

// contentClearPending: the pending change is cleared only at the version
// that recorded it.
func contentClearPending(t testing.TB, s library.ContentStore, c Clock) {
	ctx, item := context.Background(), newContent(c)
	item.Pending = &library.MemberChange{PrincipalID: "p", Role: library.RoleViewer}
	if ok, err := s.Create(ctx, item); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	stale := item
	stale.Version = 0
	if ok, err := s.ClearPending(ctx, stale); err != nil || ok {
		t.Fatalf("a clear at another version: applied=%v err=%v", ok, err)
	}
	if got, err := s.Get(ctx, item.ID); err != nil || got.Pending == nil || *got.Pending != *item.Pending {
		t.Fatalf("after a stale clear: %+v %v, want the change still pending", got, err)
	}
	if ok, err := s.ClearPending(ctx, item); err != nil || !ok {
		t.Fatalf("clear: applied=%v err=%v", ok, err)
	}
	if got, err := s.GetSerial(ctx, item.ID); err != nil || got.Pending != nil || got.Version != 1 || got.Lean {
		t.Fatalf("after the clear: %+v %v, want nothing pending at version 1, not lean", got, err)
	}
	// A lean item's clear keeps it lean; a clear that ends its lean rows
	// (a share past the limit) writes that.
	lean := newContent(c)
	lean.Lean, lean.Pending = true, item.Pending
	if ok, err := s.Create(ctx, lean); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	if got, err := s.Get(ctx, lean.ID); err != nil || !got.Lean {
		t.Fatalf("a lean item reads %+v %v", got, err)
	}
	past := lean
	past.Lean = false
	if ok, err := s.ClearPending(ctx, past); err != nil || !ok {
		t.Fatalf("clear: applied=%v err=%v", ok, err)
	}
	if got, err := s.GetSerial(ctx, lean.ID); err != nil || got.Pending != nil || got.Lean {
		t.Fatalf("after a clear past the lean rows: %+v %v, want nothing pending, not lean", got, err)
	}
}

// Libraries runs LibraryChecks.
func Libraries(t *testing.T, open Open[library.EntryStore]) { Run(t, open, LibraryChecks) }

// LibraryChecks are library.EntryStore's contract.
var LibraryChecks = []Check[library.EntryStore]{
	{"EntriesFollowTheNewestVersion", libraryVersions},
	{"SlicesPageBothWays", librarySlices},
	{"IndexPagesByContentID", libraryIndexPages},
	{"LeanRowsStayRemovedAtTheirVersion", libraryLeanRows},
	{"ATieOfTwoWritesKeepsTheGreaterValues", libraryTies},
}

// libraryTies: two writes of one entry at one version that say different
// things, landing in either order, leave the index entry and the row with
// the greater value of each column (Cassandra's rule for cells of one
// timestamp: a delete wins a tie, then the greater value), never the
// first or the last to land: lean true over false, the greater name.
// (The changes write one version alike, every finisher deciding from the
// same row; a fake that kept the first write would hide one that did not.)
func libraryTies(t testing.TB, s library.EntryStore, c Clock) {
	ctx, p := context.Background(), Key("principal")
	for _, leanFirst := range []bool{false, true} {
		item := Key("item")
		first := entryOf(p, item, library.VisibilityPublic, At(c.Now()), 5)
		first.Lean, first.Name = leanFirst, "b-name"
		second := first
		second.Lean, second.Name = !leanFirst, "a-name"
		if leanFirst {
			first.Name, second.Name = second.Name, first.Name
		}
		for _, e := range []library.Entry{first, second} {
			if err := s.Apply(ctx, e, nil); err != nil {
				t.Fatal(err)
			}
		}
		idx, err := s.Index(ctx, p, []string{item})
		if got := idx[item]; err != nil || !got.Lean || got.Name != "b-name" || got.Version != 5 {
			t.Fatalf("index after writes lean=%v then lean=%v at one version: %+v %v, want lean, named b-name", first.Lean, second.Lean, got, err)
		}
		rows, err := s.Slice(ctx, p, library.BucketPublic, library.NewestFirst, nil, 10)
		i := slices.IndexFunc(rows, func(r library.Entry) bool { return r.ContentID == item })
		if err != nil || i < 0 || !rows[i].Lean || rows[i].Name != "b-name" || rows[i].Version != 5 {
			t.Fatalf("public bucket after writes lean=%v then lean=%v at one version: %+v %v, want the item lean, named b-name", first.Lean, second.Lean, rows, err)
		}
	}
}

// libraryLeanRows: rows and index entries keep whether they are lean;
// rows removed at their own version (a change's narrowing, before its
// compare-and-set) stay removed when a write of that version lands again
// late, and come back with a write of a later version (the fan-out).
func libraryLeanRows(t testing.TB, s library.EntryStore, c Clock) {
	ctx, p, item := context.Background(), Key("principal"), Key("item")
	lean := entryOf(p, item, library.VisibilityPublic, At(c.Now()), 5)
	lean.Lean = true
	checked := entryOf(p, Key("checked"), library.VisibilityPublic, At(c.Now()).Add(-time.Minute), 1)
	for _, e := range []library.Entry{lean, checked} {
		if err := s.Apply(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.Slice(ctx, p, library.BucketPublic, library.NewestFirst, nil, 10)
	if err != nil || len(rows) != 2 || !rows[0].Lean || rows[1].Lean {
		t.Fatalf("slice: %+v %v, want the lean row, then the checked one", rows, err)
	}
	if idx, err := s.Index(ctx, p, []string{item, checked.ContentID}); err != nil || !idx[item].Lean || idx[checked.ContentID].Lean {
		t.Fatalf("index: %+v %v, want the lean entry lean and the other not", idx, err)
	}
	for _, b := range library.BucketsFor(lean.Visibility) {
		if err := s.DeleteRow(ctx, b, lean); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Apply(ctx, lean, nil); err != nil { // a late attempt of the old fan-out
		t.Fatal(err)
	}
	for _, b := range library.Buckets() {
		if got := bucketKeys(t, s, p, b); !slices.Equal(got, []string{checked.ContentID + "@1"}) {
			t.Fatalf("bucket %s after the lean rows' removal and a late write of their version: %v", b, got)
		}
	}
	next := lean
	next.Version = 6
	if err := s.Apply(ctx, next, nil); err != nil {
		t.Fatal(err)
	}
	if got := bucketKeys(t, s, p, library.BucketPublic); !slices.Equal(got, []string{item + "@6", checked.ContentID + "@1"}) {
		t.Fatalf("public bucket after a write of the next version: %v", got)
	}
}

func entryOf(principal, item string, v library.Visibility, modified time.Time, version int) library.Entry {
	return library.Entry{PrincipalID: principal, ContentID: item, Role: library.RoleViewer, Name: item, Visibility: v,
		LastModified: At(modified), Version: version}
}

// bucketKeys lists the items of a bucket, newest first.
func bucketKeys(t testing.TB, s library.EntryStore, principal, bucket string) []string {
	t.Helper()
	rows, err := s.Slice(context.Background(), principal, bucket, library.NewestFirst, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s@%d", r.ContentID, r.Version))
	}
	return out
}

// libraryVersions: the index and the rows follow the item's newest
// version: an older write landing late never overwrites a newer one, a
// removal wins a tie, and a change of visibility moves the rows.
func libraryVersions(t testing.TB, s library.EntryStore, c Clock) {
	ctx, p, item := context.Background(), Key("principal"), Key("item")
	at := At(c.Now())
	public := entryOf(p, item, library.VisibilityPublic, at, 3)
	if err := s.Apply(ctx, public, nil); err != nil {
		t.Fatal(err)
	}
	// An older write of the same row (same key) lands late.
	if err := s.Apply(ctx, entryOf(p, item, library.VisibilityPublic, at, 2), nil); err != nil {
		t.Fatal(err)
	}
	if idx, err := s.Index(ctx, p, []string{item}); err != nil || idx[item].Version != 3 {
		t.Fatalf("index after a late older write: %+v %v, want version 3", idx, err)
	}
	for _, b := range library.Buckets() {
		if got := bucketKeys(t, s, p, b); !slices.Equal(got, []string{item + "@3"}) {
			t.Fatalf("bucket %s: %v, want the item at version 3", b, got)
		}
	}
	private := entryOf(p, item, library.VisibilityPrivate, at.Add(time.Minute), 4)
	if err := s.Apply(ctx, private, &public); err != nil {
		t.Fatal(err)
	}
	if got := bucketKeys(t, s, p, library.BucketPrivate); !slices.Equal(got, []string{item + "@4"}) {
		t.Fatalf("private bucket after the change: %v, want the item once, at version 4", got)
	}
	for _, b := range []string{library.BucketLoggedIn, library.BucketPublic} {
		if got := bucketKeys(t, s, p, b); len(got) != 0 {
			t.Fatalf("bucket %s after the item went private: %v", b, got)
		}
	}
	if err := s.Remove(ctx, p, item, &private, 4); err != nil {
		t.Fatal(err)
	}
	// The removal's own version, landing again late: still removed.
	if err := s.Apply(ctx, private, nil); err != nil {
		t.Fatal(err)
	}
	if idx, err := s.Index(ctx, p, []string{item}); err != nil || len(idx) != 0 {
		t.Fatalf("index after the removal: %+v %v", idx, err)
	}
	if got := bucketKeys(t, s, p, library.BucketPrivate); len(got) != 0 {
		t.Fatalf("private bucket after the removal: %v", got)
	}
	ghost := entryOf(p, Key("ghost"), library.VisibilityPrivate, at, 1)
	if err := s.Apply(ctx, ghost, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRow(ctx, library.BucketPrivate, ghost); err != nil {
		t.Fatal(err)
	}
	if got := bucketKeys(t, s, p, library.BucketPrivate); len(got) != 0 {
		t.Fatalf("private bucket after deleting its row: %v", got)
	}
}

// librarySlices: a bucket pages newest first (ties by content id
// descending) and oldest first (the reverse), each from its cursor.
func librarySlices(t testing.TB, s library.EntryStore, c Clock) {
	ctx, p := context.Background(), Key("principal")
	base := At(c.Now())
	var all []library.Entry
	for i := range 7 {
		// Pairs of items changed at one moment.
		e := entryOf(p, fmt.Sprintf("%s-%d", Key("item"), i), library.VisibilityLoggedIn, base.Add(time.Duration(i/2)*time.Second), 1)
		all = append(all, e)
		if err := s.Apply(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	newest := slices.Clone(all)
	slices.SortFunc(newest, func(a, b library.Entry) int {
		if c := b.LastModified.Compare(a.LastModified); c != 0 {
			return c
		}
		return strings.Compare(b.ContentID, a.ContentID)
	})
	key := func(e library.Entry) string { return e.ContentID }
	for _, order := range []library.Order{library.NewestFirst, library.OldestFirst} {
		var want []string
		for _, e := range newest {
			want = append(want, e.ContentID)
		}
		if order == library.OldestFirst {
			slices.Reverse(want)
		}
		for _, limit := range []int{1, 3, 7} {
			for _, bucket := range []string{library.BucketPrivate, library.BucketLoggedIn} {
				pages(t, limit, func(last *library.Entry, limit int) ([]library.Entry, error) {
					var after *library.Cursor
					if last != nil {
						after = &library.Cursor{Order: order, LastModified: last.LastModified, ContentID: last.ContentID}
					}
					return s.Slice(ctx, p, bucket, order, after, limit)
				}, key, want)
			}
		}
	}
	if got := bucketKeys(t, s, p, library.BucketPublic); len(got) != 0 {
		t.Fatalf("the public bucket of logged-in items: %v", got)
	}
}

// libraryIndexPages: a principal's index pages by content id.
func libraryIndexPages(t testing.TB, s library.EntryStore, c Clock) {
	ctx, p := context.Background(), Key("principal")
	var want []string
	for i := range 5 {
		e := entryOf(p, fmt.Sprintf("%s-%d", Key("item"), i), library.VisibilityPrivate, c.Now(), 1)
		want = append(want, e.ContentID)
		if err := s.Apply(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	for _, limit := range []int{1, 2, 5} {
		pages(t, limit, func(last *library.Entry, limit int) ([]library.Entry, error) {
			after := ""
			if last != nil {
				after = last.ContentID
			}
			return s.IndexPage(ctx, p, after, limit)
		}, func(e library.Entry) string { return e.ContentID }, want)
	}
	if n, err := s.CountIndex(ctx, p); err != nil || n != len(want) {
		t.Fatalf("count: %d %v; want %d", n, err, len(want))
	}
	if n, err := s.CountIndex(ctx, Key("nobody")); err != nil || n != 0 {
		t.Fatalf("count of an empty library: %d %v", n, err)
	}
}
