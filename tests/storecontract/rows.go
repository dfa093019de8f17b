package storecontract

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
)

// rowStore is a table of compare-and-set rows that start pending under a
// lease (users, groups), seen through one shape: R is its row.
type rowStore[R any] struct {
	create   func(ctx context.Context, r R, lease time.Duration) error
	activate func(ctx context.Context, r R) (bool, error)
	discard  func(ctx context.Context, id string) error
	get      func(ctx context.Context, id string) (R, error)
	serial   func(ctx context.Context, id string) (R, error)
	update   func(ctx context.Context, r R) (bool, error)
	// row makes a row; name and version read one.
	row     func(id, name string, status domain.Status, version int) R
	name    func(R) string
	version func(R) int
}

// UserStore is what an account store is to its consumers: the accounts'
// store, and moderation's read of an account's standing.
type UserStore interface {
	accounts.UserStore
	Standing(ctx context.Context, id string) (domain.Standing, error)
	Hold(ctx context.Context, id, tag string, d time.Duration) (bool, error)
}

// Users runs UserChecks.
func Users(t *testing.T, open Open[UserStore]) { Run(t, open, UserChecks) }

// UserChecks are UserStore's contract. The row checks activate an account
// with the tag its last create answered.
var UserChecks = append(rowChecks(func(s UserStore) rowStore[domain.User] {
	tags := map[string]string{}
	return rowStore[domain.User]{
		create: func(ctx context.Context, u domain.User, lease time.Duration) error {
			tag, err := s.Create(ctx, u, lease)
			tags[u.ID] = tag
			return err
		},
		activate: func(ctx context.Context, u domain.User) (bool, error) { return s.Activate(ctx, u, tags[u.ID]) },
		discard:  s.Discard, get: s.Get, serial: s.GetSerial, update: s.Update,
		row: func(id, name string, status domain.Status, version int) domain.User {
			return domain.User{ID: id, Username: name, UsernameKey: name, Email: name + "@example.com", Status: status, Version: version}
		},
		name:    func(u domain.User) string { return u.Username },
		version: func(u domain.User) int { return u.Version }}
}), Check[UserStore]{"ProfileReadsThePublicColumns", userProfile},
	Check[UserStore]{"NarrowReadsReadTheirColumns", userNarrowReads},
	Check[UserStore]{"ASuspensionKeepsItsUsername", userSuspensionUsername},
	Check[UserStore]{"RefusedAddressesRoundTrip", userRefusedAddresses},
	Check[UserStore]{"ActivationTakesOnlyItsAttemptsRow", userActivationTakesItsAttempt},
	Check[UserStore]{"AHoldOutlivesWritesAndNotItsTime", userHold},
	Check[UserStore]{"AFreeHoldTakesNoLiveHoldsPlace", userHoldFree})

// userHold: a moderation hold on a visible account reads as held, at
// SERIAL and not, through an update of the row (no write carries it),
// until its time passes, the row then as the update wrote it. A hold
// applies to no pending account (whose row still expires with its lease)
// and writes no row for an id without one.
func userHold(t testing.TB, s UserStore, c Clock) {
	ctx, id := context.Background(), Key("u")
	u := domain.User{ID: id, Username: "Ann", UsernameKey: "ann", Email: "ann@example.com", EmailKey: "ann@example.com",
		Status: domain.StatusActive, CreatedAt: At(c.Now()), UpdatedAt: At(c.Now()), Version: 1}
	createActive(t, s, u)
	if ok, err := s.Hold(ctx, id, "attempt-1", TTL); err != nil || !ok {
		t.Fatalf("holding an active account: %v %v", ok, err)
	}
	u.DisplayName, u.Version = "Ann A.", 2
	if ok, err := s.Update(ctx, u); err != nil || !ok {
		t.Fatalf("an update of a held account: %v %v", ok, err)
	}
	for name, read := range map[string]func(context.Context, string) (domain.User, error){"Get": s.Get, "GetSerial": s.GetSerial} {
		if got, err := read(ctx, id); err != nil || !got.ModerationHeld || got.Version != 2 {
			t.Fatalf("%s after the update: held %v at version %d (%v), want held at 2", name, got.ModerationHeld, got.Version, err)
		}
	}
	pendingID, missing := Key("u"), Key("u")
	pending := domain.User{ID: pendingID, Username: "Bob", UsernameKey: "bob", Email: "bob@example.com", EmailKey: "bob@example.com",
		Status: domain.StatusPending, Version: 1}
	if _, err := s.Create(ctx, pending, TTL); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{pendingID, missing} {
		if ok, err := s.Hold(ctx, other, "attempt-2", Long); err != nil || ok {
			t.Fatalf("holding %s (pending, or none): %v %v, want not applied", other, ok, err)
		}
	}
	c.Pass(TTLPassed)
	got, err := s.GetSerial(ctx, id)
	if err != nil || got.ModerationHeld || got.DisplayName != "Ann A." || got.Version != 2 {
		t.Fatalf("past the hold's time: held %v, %q at version %d (%v), want the update's row, not held", got.ModerationHeld, got.DisplayName, got.Version, err)
	}
	for _, other := range []string{pendingID, missing} {
		if got, err := s.GetSerial(ctx, other); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("%s past its lease: %+v %v, want no row", other, got, err)
		}
	}
}

// userActivationTakesItsAttempt is activationTakesItsAttempt for
// accounts: a row written again by another attempt of the insert (one
// landing late after the first row went, and the names taken over by
// another signup) is never activated by the first's tag (U1).
func userActivationTakesItsAttempt(t testing.TB, s UserStore, _ Clock) {
	id := Key("u")
	pending := domain.User{ID: id, Username: "pending", UsernameKey: "pending", Email: "p@example.com", EmailKey: "p@example.com",
		Status: domain.StatusPending, Version: 1}
	active := pending
	active.DisplayName, active.Status = "active", domain.StatusActive
	activationTakesItsAttempt(t, id, pending, active, s.Create, s.Activate, s.Discard, s.GetSerial, s.Get,
		func(u domain.User) string { return string(u.Status) + " " + u.DisplayName })
}

// userSuspensionUsername: a suspension keeps the username it was written
// with through a rename of its account (the whole row written again, as
// every change does), in the whole row and in Standing; a lift drops it,
// and the next suspension has its own. A suspension written without one
// (a row from before the column) reads as named by the account's username.
func userSuspensionUsername(t testing.TB, s UserStore, c Clock) {
	ctx, id := context.Background(), Key("u")
	now := At(c.Now())
	u := domain.User{ID: id, Username: "Ann", UsernameKey: "ann", Email: "ann@example.com", EmailKey: "ann@example.com",
		Status: domain.StatusSuspended, CreatedAt: now, UpdatedAt: now, Version: 1,
		Suspension: &domain.Suspension{UserID: id, Username: "Ann", Reason: "spam", SuspendedAt: now, SuspendedBy: "u_admin", Bucket: "2030-01-01"}}
	createActive(t, s, u)
	named := func(step, account, suspension string) {
		t.Helper()
		whole, err := s.GetSerial(ctx, id)
		standing, serr := s.Standing(ctx, id)
		if err != nil || serr != nil || whole.Username != account || whole.Suspension == nil || standing.Suspension == nil {
			t.Fatalf("%s: %+v %v, standing %+v %v", step, whole, err, standing, serr)
		}
		if whole.Suspension.Username != suspension || standing.Suspension.Username != suspension {
			t.Errorf("%s: the suspension reads as %q (Standing %q), want %q", step, whole.Suspension.Username, standing.Suspension.Username, suspension)
		}
	}
	write := func(step string, change func(u *domain.User)) {
		t.Helper()
		u.Version++
		change(&u)
		if ok, err := s.Update(ctx, u); err != nil || !ok {
			t.Fatalf("%s: %v %v", step, ok, err)
		}
	}
	write("the rename", func(u *domain.User) { u.Username, u.UsernameKey = "Bea", "bea" })
	named("renamed while suspended", "Bea", "Ann")
	write("the lift", func(u *domain.User) { u.Status, u.Suspension = domain.StatusActive, nil })
	write("the next suspension", func(u *domain.User) {
		u.Status = domain.StatusSuspended
		u.Suspension = &domain.Suspension{UserID: id, Username: "Bea", Reason: "again", SuspendedAt: now.Add(time.Minute), SuspendedBy: "u_admin", Bucket: "2030-01-01"}
	})
	named("suspended again", "Bea", "Bea")
	write("a rename with a suspension written without a username", func(u *domain.User) {
		unnamed := *u.Suspension
		unnamed.Username = ""
		u.Username, u.UsernameKey, u.Suspension = "Cy", "cy", &unnamed
	})
	named("a suspension without a username", "Cy", "Cy")
}

// userRefusedAddresses: the keys an account was refused ("not me") read
// back as written (in order: a set reads sorted, and the domain keeps
// them in the order refused, so two are written sorted here), an update
// that adds one keeps them all, and one that writes none clears them (a
// deletion's erasure).
func userRefusedAddresses(t testing.TB, s UserStore, c Clock) {
	ctx, id := context.Background(), Key("u")
	u := domain.User{ID: id, Username: "Ann", UsernameKey: "ann", Email: "ann@example.com", EmailKey: "ann@example.com",
		Status: domain.StatusActive, CreatedAt: At(c.Now()), UpdatedAt: At(c.Now()), Version: 1,
		RefusedEmailKeys: []string{"a@stranger.example"}}
	createActive(t, s, u)
	u.RefusedEmailKeys, u.Version = []string{"a@stranger.example", "b@stranger.example"}, 2
	if ok, err := s.Update(ctx, u); err != nil || !ok {
		t.Fatalf("update adding a refused address: %v %v", ok, err)
	}
	if got, err := s.GetSerial(ctx, id); err != nil || !reflect.DeepEqual(got.RefusedEmailKeys, u.RefusedEmailKeys) {
		t.Fatalf("refused addresses read back as %v (%v), want %v", got.RefusedEmailKeys, err, u.RefusedEmailKeys)
	}
	u.RefusedEmailKeys, u.Version = nil, 3
	if ok, err := s.Update(ctx, u); err != nil || !ok {
		t.Fatalf("update clearing the refused addresses: %v %v", ok, err)
	}
	if got, err := s.GetSerial(ctx, id); err != nil || len(got.RefusedEmailKeys) != 0 {
		t.Fatalf("after an update writing none the refused addresses read %v (%v), want none", got.RefusedEmailKeys, err)
	}
}

// userProfile: Profile reads an account's id, username, display name,
// status and creation time as they were written (domain.Profile has no
// field for the rest); no account is ErrNotFound.
func userProfile(t testing.TB, s UserStore, c Clock) {
	ctx, id := context.Background(), Key("u")
	u := domain.User{ID: id, Username: "Ann", UsernameKey: "ann", Email: "ann@example.com", EmailKey: "ann@example.com",
		DisplayName: "Ann A.", PasswordHash: "$argon2id$x", Roles: []string{"admin"}, Status: domain.StatusPending,
		CreatedAt: At(c.Now()), UpdatedAt: At(c.Now()), Version: 1}
	u.Status = domain.StatusActive
	createActive(t, s, u)
	got, err := s.Profile(ctx, id)
	want := domain.Profile{ID: id, Username: "Ann", DisplayName: "Ann A.", Status: domain.StatusActive, CreatedAt: u.CreatedAt}
	if err != nil || got.ID != want.ID || got.Username != want.Username || got.DisplayName != want.DisplayName ||
		got.Status != want.Status || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("profile: %+v %v, want %+v", got, err, want)
	}
	if _, err := s.Profile(ctx, Key("nobody")); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("profile of no account: %v, want ErrNotFound", err)
	}
}

// userNarrowReads: each narrow read (Profile, Access, Credentials, Shown, Claimed,
// SignedIn, Standing) answers what the domain's view of the whole row
// (domain.User.Access ...) holds, for an account with every column set,
// so a column missing from a statement, or read into another's field,
// shows; no account is ErrNotFound for each.
func userNarrowReads(t testing.TB, s UserStore, c Clock) {
	ctx, id := context.Background(), Key("u")
	now := At(c.Now())
	u := domain.User{ID: id, Username: "Ann", UsernameKey: "ann", Email: "ann@example.com", EmailKey: "ann@example.com",
		DisplayName: "Ann A.", PasswordHash: "$argon2id$x", Roles: []string{domain.RoleAdmin}, Status: domain.StatusPending,
		CreatedAt: now.Add(-time.Hour), UpdatedAt: now, Version: 1, EmailVerifiedAt: now.Add(-time.Minute),
		PasswordEpoch: 3, PasswordSession: "hash-of-a-session", PasswordResetRequired: true, RecoveryEpoch: 2, AddressEpoch: 1,
		PendingEmail: "Ann@New.example", PendingEmailKey: "ann@new.example", PendingEmailAt: now.Add(-2 * time.Minute),
		PendingEmailSession: "s_x", RecoveryEmail: "ann@old.example", RecoveryEmailKey: "ann@old.example",
		RecoveryUntil: now.Add(time.Hour), HeldUsername: "Annie", HeldUsernameKey: "annie", HeldUsernameUntil: now.Add(3 * time.Hour),
		Suspension: &domain.Suspension{UserID: id, Username: "Ann", Reason: "spam", SuspendedAt: now.Add(-3 * time.Minute),
			SuspendedBy: "u_admin", Until: now.Add(2 * time.Hour), Bucket: "2030-01-01"}}
	u.Status = domain.StatusSuspended
	createActive(t, s, u)
	whole, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if whole.RecoveryEpoch != u.RecoveryEpoch || whole.PasswordEpoch != u.PasswordEpoch || whole.AddressEpoch != u.AddressEpoch {
		t.Errorf("the epochs read back as password %d, recovery %d, address %d; written %d, %d, %d",
			whole.PasswordEpoch, whole.RecoveryEpoch, whole.AddressEpoch, u.PasswordEpoch, u.RecoveryEpoch, u.AddressEpoch)
	}
	if whole.HeldUsername != u.HeldUsername || whole.HeldUsernameKey != u.HeldUsernameKey || !whole.HeldUsernameUntil.Equal(u.HeldUsernameUntil) {
		t.Errorf("the username held read back as %q %q until %v; written %q %q until %v",
			whole.HeldUsername, whole.HeldUsernameKey, whole.HeldUsernameUntil, u.HeldUsername, u.HeldUsernameKey, u.HeldUsernameUntil)
	}
	reads := []struct {
		name string
		read func(id string) (any, error)
		want any
	}{
		{"Profile", func(id string) (any, error) { return s.Profile(ctx, id) }, whole.Profile()},
		{"Access", func(id string) (any, error) { return s.Access(ctx, id) }, whole.Access()},
		{"Credentials", func(id string) (any, error) { return s.Credentials(ctx, id) }, whole.Credentials()},
		{"Shown", func(id string) (any, error) { return s.Shown(ctx, id) }, whole.Shown()},
		{"Claimed", func(id string) (any, error) { return s.Claimed(ctx, id) }, whole.Claimed()},
		{"SignedIn", func(id string) (any, error) { return s.SignedIn(ctx, id) }, whole.SignedIn()},
		{"Standing", func(id string) (any, error) { return s.Standing(ctx, id) }, whole.Standing()},
	}
	for _, r := range reads {
		got, err := r.read(id)
		if err != nil || !reflect.DeepEqual(got, r.want) {
			t.Errorf("%s: %+v %v, want %+v", r.name, got, err, r.want)
		}
		if _, err := r.read(Key("nobody")); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s of no account: %v, want ErrNotFound", r.name, err)
		}
	}
}

// createActive creates u as a pending account, then activates it with
// u's status.
func createActive(t testing.TB, s UserStore, u domain.User) {
	t.Helper()
	ctx := context.Background()
	pending := u
	pending.Status = domain.StatusPending
	tag, err := s.Create(ctx, pending, Long)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Activate(ctx, u, tag); err != nil || !ok {
		t.Fatalf("activate: %v %v", ok, err)
	}
}

// Groups runs GroupChecks.
func Groups(t *testing.T, open Open[groups.Store]) { Run(t, open, GroupChecks) }

// GroupChecks are groups.Store's contract. The row checks activate a group
// with the tag its last create answered.
var GroupChecks = append(rowChecks(func(s groups.Store) rowStore[groups.Group] {
	tags := map[string]string{}
	return rowStore[groups.Group]{
		create: func(ctx context.Context, g groups.Group, lease time.Duration) error {
			tag, err := s.Create(ctx, g, lease)
			tags[g.ID] = tag
			return err
		},
		activate: func(ctx context.Context, g groups.Group) (bool, error) { return s.Activate(ctx, g, tags[g.ID]) },
		discard:  s.Discard, get: s.Get, serial: s.GetSerial, update: s.Update,
		row: func(id, name string, status domain.Status, version int) groups.Group {
			return groups.Group{ID: id, Name: name, NameKey: name, Status: status, Version: version}
		},
		name:    func(g groups.Group) string { return g.Name },
		version: func(g groups.Group) int { return g.Version }}
}), Check[groups.Store]{"ActivationTakesOnlyItsAttemptsRow", groupActivationTakesItsAttempt})

// groupActivationTakesItsAttempt is activationTakesItsAttempt for
// groups.
func groupActivationTakesItsAttempt(t testing.TB, s groups.Store, _ Clock) {
	id := Key("group")
	pending := groups.Group{ID: id, Name: "pending", NameKey: "pending", Status: domain.StatusPending, Version: 1}
	active := pending
	active.Name, active.Status = "active", domain.StatusActive
	activationTakesItsAttempt(t, id, pending, active, s.Create, s.Activate, s.Discard, s.GetSerial, s.Get,
		func(g groups.Group) string { return string(g.Status) + " " + g.Name })
}

// activationTakesItsAttempt: each create answers a tag of its own, and an
// activation takes the pending row only under the tag of the attempt
// that wrote it: a row written again by another attempt (one landing late
// after the first row went) stays pending, as the activation of its own
// tag finds it. shown is a row's status and the field active changes.
func activationTakesItsAttempt[R any](t testing.TB, id string, pending, active R,
	create func(context.Context, R, time.Duration) (string, error), activate func(context.Context, R, string) (bool, error),
	discard func(context.Context, string) error, serial, get func(context.Context, string) (R, error), shown func(R) string) {
	ctx := context.Background()
	first, err := create(ctx, pending, Long)
	if err != nil {
		t.Fatal(err)
	}
	if err := discard(ctx, id); err != nil {
		t.Fatal(err)
	}
	late, err := create(ctx, pending, Long)
	if err != nil {
		t.Fatal(err)
	}
	if first == "" || first == late {
		t.Fatalf("two creates answered the tags %q and %q, want two of their own", first, late)
	}
	if ok, err := activate(ctx, active, first); err != nil || ok {
		t.Fatalf("activating another attempt's row: applied=%v err=%v", ok, err)
	}
	if got, err := serial(ctx, id); err != nil || shown(got) != shown(pending) {
		t.Fatalf("after an activation of another attempt's tag: %+v %v, want the row still pending as written", got, err)
	}
	if ok, err := activate(ctx, active, late); err != nil || !ok {
		t.Fatalf("activating the row under its own attempt's tag: applied=%v err=%v", ok, err)
	}
	if got, err := get(ctx, id); err != nil || shown(got) != shown(active) {
		t.Fatalf("after the activation: %+v %v, want it active as written", got, err)
	}
}

func rowChecks[S, R any](view func(S) rowStore[R]) []Check[S] {
	check := func(name string, run func(testing.TB, rowStore[R], Clock)) Check[S] {
		return Check[S]{name, func(t testing.TB, s S, c Clock) { run(t, view(s), c) }}
	}
	return []Check[S]{
		check("UpdateDecidedOnce", rowUpdateDecidedOnce[R]),
		check("PendingRowsExpire", rowPendingExpire[R]),
		check("DiscardTakesOnlyPending", rowDiscardOnlyPending[R]),
		check("UpdateRewritesWithoutTTL", rowUpdateOfPending[R]),
	}
}

// activeRow creates and activates a row at version 1.
func activeRow[R any](t testing.TB, s rowStore[R], id string) R {
	t.Helper()
	ctx := context.Background()
	if err := s.create(ctx, s.row(id, "pending", domain.StatusPending, 1), Long); err != nil {
		t.Fatal(err)
	}
	r := s.row(id, "active", domain.StatusActive, 1)
	if ok, err := s.activate(ctx, r); err != nil || !ok {
		t.Fatalf("activate: %v %v", ok, err)
	}
	return r
}

// rowUpdateDecidedOnce: of racers writing version 2, exactly one applies,
// and the row holds its write; a second write of version 2 does not
// apply; creating the id again is an error.
func rowUpdateDecidedOnce[R any](t testing.TB, s rowStore[R], _ Clock) {
	ctx, id := context.Background(), Key("row")
	activeRow(t, s, id)
	winner := race(t, "update", func(i int) (bool, error) {
		return s.update(ctx, s.row(id, fmt.Sprintf("racer%d", i), domain.StatusActive, 2))
	})
	for _, read := range []func(context.Context, string) (R, error){s.get, s.serial} {
		got, err := read(ctx, id)
		if err != nil || s.name(got) != fmt.Sprintf("racer%d", winner) || s.version(got) != 2 {
			t.Fatalf("after the race: %+v %v, want racer%d's write at version 2", got, err, winner)
		}
	}
	if ok, err := s.update(ctx, s.row(id, "again", domain.StatusActive, 2)); err != nil || ok {
		t.Fatalf("a second update of version 1: applied=%v err=%v", ok, err)
	}
	if err := s.create(ctx, s.row(id, "again", domain.StatusPending, 1), Long); err == nil {
		t.Fatal("creating an id that exists succeeded")
	}
}

// rowPendingExpire: a pending row is gone after its lease and cannot be
// activated; an activated one has no TTL.
func rowPendingExpire[R any](t testing.TB, s rowStore[R], c Clock) {
	ctx, pending, active := context.Background(), Key("pending"), Key("active")
	for _, id := range []string{pending, active} {
		if err := s.create(ctx, s.row(id, "pending", domain.StatusPending, 1), TTL); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := s.activate(ctx, s.row(active, "active", domain.StatusActive, 1)); err != nil || !ok {
		t.Fatalf("activate: %v %v", ok, err)
	}
	c.Pass(TTLPassed)
	if got, err := s.get(ctx, pending); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a pending row past its lease: %+v %v, want ErrNotFound", got, err)
	}
	if ok, err := s.activate(ctx, s.row(pending, "late", domain.StatusActive, 1)); err != nil || ok {
		t.Fatalf("activating a row past its lease: applied=%v err=%v", ok, err)
	}
	if got, err := s.get(ctx, active); err != nil || s.name(got) != "active" {
		t.Fatalf("an activated row after its lease: %+v %v", got, err)
	}
}

// rowDiscardOnlyPending: discarding an active row leaves it; a pending one
// goes, and activating it after does not apply.
func rowDiscardOnlyPending[R any](t testing.TB, s rowStore[R], _ Clock) {
	ctx, active, pending := context.Background(), Key("active"), Key("pending")
	activeRow(t, s, active)
	if err := s.discard(ctx, active); err != nil {
		t.Fatal(err)
	}
	if _, err := s.get(ctx, active); err != nil {
		t.Fatalf("discard deleted an active row: %v", err)
	}
	if err := s.create(ctx, s.row(pending, "pending", domain.StatusPending, 1), Long); err != nil {
		t.Fatal(err)
	}
	if err := s.discard(ctx, pending); err != nil {
		t.Fatal(err)
	}
	if got, err := s.serial(ctx, pending); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a discarded row: %+v %v, want ErrNotFound", got, err)
	}
	if ok, err := s.activate(ctx, s.row(pending, "late", domain.StatusActive, 1)); err != nil || ok {
		t.Fatalf("activating a discarded row: applied=%v err=%v", ok, err)
	}
}

// rowUpdateOfPending: an update writes its columns without a TTL, so a
// pending row that an update reached outlives its lease, still pending
// (Cassandra keeps a row while any cell of it lives).
func rowUpdateOfPending[R any](t testing.TB, s rowStore[R], c Clock) {
	ctx, id := context.Background(), Key("updated")
	if err := s.create(ctx, s.row(id, "pending", domain.StatusPending, 1), TTL); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.update(ctx, s.row(id, "changed", domain.StatusPending, 2)); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	c.Pass(TTLPassed)
	if got, err := s.get(ctx, id); err != nil || s.name(got) != "changed" || s.version(got) != 2 {
		t.Fatalf("an updated pending row after its lease: %+v %v, want it kept at version 2", got, err)
	}
}

// userHoldFree: a recovery's hold (HoldFree) is not written over a hold
// that lives (an admin's stays, read as no recovery's), and is written
// once that hold's time has passed, read as a recovery's; an admin's
// hold (Hold) is written over it.
func userHoldFree(t testing.TB, s UserStore, c Clock) {
	ctx, id := context.Background(), Key("u")
	u := domain.User{ID: id, Username: "Ann", UsernameKey: "ann", Email: "ann@example.com", EmailKey: "ann@example.com",
		Status: domain.StatusActive, CreatedAt: At(c.Now()), UpdatedAt: At(c.Now()), Version: 1}
	createActive(t, s, u)
	if ok, err := s.Hold(ctx, id, "attempt-1", TTL); err != nil || !ok {
		t.Fatalf("an admin's hold: %v %v", ok, err)
	}
	if ok, err := s.HoldFree(ctx, id, domain.NewRecoveryHold(), TTL); err != nil || ok {
		t.Fatalf("a recovery's hold over an admin's: %v %v, want not applied", ok, err)
	}
	if got, err := s.GetSerial(ctx, id); err != nil || !got.ModerationHeld || got.RecoveryHeld {
		t.Fatalf("after a recovery's hold over an admin's: held %v, a recovery's %v (%v); want the admin's", got.ModerationHeld, got.RecoveryHeld, err)
	}
	c.Pass(TTLPassed)
	if ok, err := s.HoldFree(ctx, id, domain.NewRecoveryHold(), TTL); err != nil || !ok {
		t.Fatalf("a recovery's hold past the admin's time: %v %v, want applied", ok, err)
	}
	if got, err := s.GetSerial(ctx, id); err != nil || !got.ModerationHeld || !got.RecoveryHeld {
		t.Fatalf("after a recovery's hold: held %v, a recovery's %v (%v); want a recovery's", got.ModerationHeld, got.RecoveryHeld, err)
	}
	if ok, err := s.Hold(ctx, id, "attempt-2", TTL); err != nil || !ok {
		t.Fatalf("an admin's hold over a recovery's: %v %v", ok, err)
	}
	if got, err := s.GetSerial(ctx, id); err != nil || !got.ModerationHeld || got.RecoveryHeld {
		t.Fatalf("after an admin's hold over a recovery's: held %v, a recovery's %v (%v); want the admin's", got.ModerationHeld, got.RecoveryHeld, err)
	}
}
