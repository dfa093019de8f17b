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
	"shelf/domain/accounts"
)

// Tokens runs TokenChecks.
func Tokens(t *testing.T, open Open[accounts.TokenStore]) { Run(t, open, TokenChecks) }

// TokenChecks are accounts.TokenStore's contract.
var TokenChecks = []Check[accounts.TokenStore]{
	{"UseDecidedOnce", tokenUseDecidedOnce},
	{"GoneAfterExpiryAndGrace", tokenExpires},
}

func newToken(c Clock, expires time.Time) accounts.Token {
	return accounts.Token{Hash: Key("token"), Purpose: accounts.PurposeResetPassword, UserID: Key("user"),
		Email: "a@example.com", EmailKey: "a@example.com", PasswordPrint: "print", CreatedAt: At(c.Now()), ExpiresAt: At(expires),
		Subject: "fac_subject"}
}

// tokenUseDecidedOnce: a use of another purpose does not apply; of racers
// using one token exactly one applies and the row carries its use (the
// new password, the recovery it read); Done applies for that use alone.
func tokenUseDecidedOnce(t testing.TB, s accounts.TokenStore, c Clock) {
	ctx := context.Background()
	tok := newToken(c, c.Now().Add(Long))
	if err := s.Create(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, tok); err == nil {
		t.Fatal("creating a token whose hash exists succeeded")
	}
	wrong := tok
	wrong.Purpose, wrong.UsedAt, wrong.UseID = accounts.PurposeVerifyEmail, At(c.Now()), "wrong"
	if ok, err := s.Use(ctx, wrong); err != nil || ok {
		t.Fatalf("a use for another purpose: applied=%v err=%v", ok, err)
	}
	winner := race(t, "use", func(i int) (bool, error) {
		use := tok
		use.UsedAt, use.UseID, use.NewPassword = At(c.Now()), fmt.Sprintf("use%d", i), fmt.Sprintf("hash%d", i)
		use.UsedRecovery = fmt.Sprintf("recovery%d", i)
		return s.Use(ctx, use)
	})
	used := fmt.Sprintf("use%d", winner)
	got, err := s.Get(ctx, tok.Hash)
	if err != nil || got.UseID != used || got.NewPassword != fmt.Sprintf("hash%d", winner) || got.UsedRecovery != fmt.Sprintf("recovery%d", winner) || got.UsedAt.IsZero() || !got.DoneAt.IsZero() || got.Subject != tok.Subject {
		t.Fatalf("after the race: %+v %v, want %s's use, not done", got, err, used)
	}
	loser := tok
	loser.UseID = "not-the-use"
	if ok, err := s.Done(ctx, loser, At(c.Now())); err != nil || ok {
		t.Fatalf("done for another use: applied=%v err=%v", ok, err)
	}
	if ok, err := s.Done(ctx, got, At(c.Now())); err != nil || !ok {
		t.Fatalf("done: applied=%v err=%v", ok, err)
	}
	if got, err := s.Get(ctx, tok.Hash); err != nil || got.DoneAt.IsZero() || got.UseID != used {
		t.Fatalf("after done: %+v %v", got, err)
	}
}

// tokenExpires: a token's row is gone once its expiry and the grace have
// passed, used or not, and a use then does not apply.
func tokenExpires(t testing.TB, s accounts.TokenStore, c Clock) {
	ctx := context.Background()
	// Its row lives TTL more.
	unused := newToken(c, c.Now().Add(-accounts.TokenGrace+TTL))
	used := newToken(c, unused.ExpiresAt)
	for _, tok := range []accounts.Token{unused, used} {
		if err := s.Create(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	used.UsedAt, used.UseID = At(c.Now()), "use"
	if ok, err := s.Use(ctx, used); err != nil || !ok {
		t.Fatalf("use: %v %v", ok, err)
	}
	c.Pass(TTLPassed)
	for _, tok := range []accounts.Token{unused, used} {
		if got, err := s.Get(ctx, tok.Hash); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("a token past its expiry and grace: %+v %v, want ErrNotFound", got, err)
		}
	}
	unused.UsedAt, unused.UseID = At(c.Now()), "late"
	if ok, err := s.Use(ctx, unused); err != nil || ok {
		t.Fatalf("a use of a gone token: applied=%v err=%v", ok, err)
	}
}

// Sessions runs SessionChecks.
func Sessions(t *testing.T, open Open[accounts.SessionStore]) { Run(t, open, SessionChecks) }

// SessionChecks are accounts.SessionStore's contract.
var SessionChecks = []Check[accounts.SessionStore]{
	{"ExpireWithTheirTTL", sessionsExpire},
	{"LaterSightingWins", sessionLaterSightingWins},
	{"RevocationShadowsTheLoginAndSightings", sessionRevocationWins},
	{"DeleteAllKeepsOne", sessionDeleteAll},
	{"NewestFirstOneSliceAtATime", sessionsNewestFirst},
	{"EntryByPublicID", sessionEntryByID},
}

func newSession(c Clock, user string, ttl time.Duration) domain.Session {
	now := At(c.Now())
	return domain.Session{TokenHash: Key("session"), UserID: user, CreatedAt: now, ExpiresAt: now.Add(ttl), PasswordEpoch: 1}
}

// entriesOf lists the user's index entries by token hash.
func entriesOf(t testing.TB, s accounts.SessionStore, user string) map[string]domain.Session {
	t.Helper()
	list, err := s.Entries(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]domain.Session{}
	for _, e := range list {
		if _, twice := out[e.TokenHash]; twice {
			t.Fatalf("entry %s listed twice", e.TokenHash)
		}
		out[e.TokenHash] = e
	}
	return out
}

// sessionsExpire: a session and its index entry are gone after its TTL; a
// longer one stays, listed with its write timestamp.
func sessionsExpire(t testing.TB, s accounts.SessionStore, c Clock) {
	ctx, user := context.Background(), Key("user")
	short, long := newSession(c, user, TTL), newSession(c, user, Long)
	for _, sess := range []domain.Session{short, long} {
		if err := s.Create(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	entries := entriesOf(t, s, user)
	if len(entries) != 2 || entries[short.TokenHash].Written == 0 || !entries[long.TokenHash].ExpiresAt.Equal(long.ExpiresAt) {
		t.Fatalf("entries: %+v, want both sessions with their write timestamps", entries)
	}
	if got, err := s.Get(ctx, short.TokenHash); err != nil || got.UserID != user || got.Written != entries[short.TokenHash].Written {
		t.Fatalf("get: %+v %v, want the session written when its entry was", got, err)
	}
	c.Pass(TTLPassed)
	if got, err := s.Get(ctx, short.TokenHash); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a session past its TTL: %+v %v, want ErrNotFound", got, err)
	}
	many, err := s.GetMany(ctx, []string{short.TokenHash, long.TokenHash})
	if err != nil || len(many) != 1 || many[long.TokenHash].UserID != user {
		t.Fatalf("get many after the TTL: %+v %v, want the long session alone", many, err)
	}
	if entries := entriesOf(t, s, user); len(entries) != 1 || entries[long.TokenHash].TokenHash == "" {
		t.Fatalf("entries after the TTL: %+v, want the long session's alone", entries)
	}
}

// sessionLaterSightingWins: of two sightings the later is kept, whichever
// lands last.
func sessionLaterSightingWins(t testing.TB, s accounts.SessionStore, c Clock) {
	ctx := context.Background()
	sess := newSession(c, Key("user"), Long)
	if err := s.Create(ctx, sess); err != nil {
		t.Fatal(err)
	}
	early, late := sess.CreatedAt.Add(time.Minute), sess.CreatedAt.Add(2*time.Minute)
	if err := s.Touch(ctx, sess, late); err != nil {
		t.Fatal(err)
	}
	if err := s.Touch(ctx, sess, early); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, sess.TokenHash); err != nil || !got.LastSeen.Equal(late) {
		t.Fatalf("after a late sighting landed before an earlier one: %+v %v, want last seen %v", got, err, late)
	}
}

// sessionRevocationWins: a revocation (at the write timestamp + 1) ends
// the session and its entry; a sighting landing after it, before or after
// its timestamp, never makes the session work or listed again.
func sessionRevocationWins(t testing.TB, s accounts.SessionStore, c Clock) {
	ctx, user := context.Background(), Key("user")
	sess := newSession(c, user, Long)
	if err := s.Create(ctx, sess); err != nil {
		t.Fatal(err)
	}
	sess = entriesOf(t, s, user)[sess.TokenHash]
	if err := s.Delete(ctx, sess); err != nil {
		t.Fatal(err)
	}
	for _, seen := range []time.Time{time.UnixMicro(sess.Written).UTC(), At(c.Now().Add(time.Hour))} {
		if err := s.Touch(ctx, sess, seen); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, sess.TokenHash); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("a revoked session seen at %v: %+v %v, want ErrNotFound", seen, got, err)
		}
		if many, err := s.GetMany(ctx, []string{sess.TokenHash}); err != nil || len(many) != 0 {
			t.Fatalf("a revoked session in get many: %+v %v", many, err)
		}
	}
	if entries := entriesOf(t, s, user); len(entries) != 0 {
		t.Fatalf("a revoked session is listed: %+v", entries)
	}
}

// sessionDeleteAll: every session of the user but the one kept is
// revoked, and its entries with it (newest first and by id too).
func sessionDeleteAll(t testing.TB, s accounts.SessionStore, c Clock) {
	ctx, user := context.Background(), Key("user")
	var all []domain.Session
	for range 3 {
		sess := newSession(c, user, Long)
		if err := s.Create(ctx, sess); err != nil {
			t.Fatal(err)
		}
		all = append(all, sess)
	}
	if err := s.DeleteAll(ctx, user, all[1].TokenHash); err != nil {
		t.Fatal(err)
	}
	for i, sess := range all {
		_, err := s.Get(ctx, sess.TokenHash)
		if kept := i == 1; kept != (err == nil) {
			t.Errorf("session %d after revoking all but 1: %v", i, err)
		}
	}
	if entries := entriesOf(t, s, user); len(entries) != 1 || entries[all[1].TokenHash].TokenHash == "" {
		t.Fatalf("entries after revoking all but one: %+v", entries)
	}
	if slice, err := s.Newest(context.Background(), user, 1, nil, 5); err != nil || len(slice) != 1 || slice[0].TokenHash != all[1].TokenHash {
		t.Fatalf("newest first after revoking all but one: %+v %v, want the kept session's entry alone", slice, err)
	}
	for i, sess := range all {
		if _, err := s.Entry(context.Background(), user, sess.ID()); (i == 1) != (err == nil) {
			t.Errorf("session %d's entry by id after revoking all but 1: %v", i, err)
		}
	}
}

// sessionsNewestFirst: Newest reads the user's entries of one password
// epoch newest first, ties by public id descending, a slice after another
// from the last entry read, and leaves out a revoked one, another
// epoch's and another user's.
func sessionsNewestFirst(t testing.TB, s accounts.SessionStore, c Clock) {
	ctx, user := context.Background(), Key("user")
	base := At(c.Now())
	var made []domain.Session
	for i, at := range []time.Duration{0, time.Second, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		sess := newSession(c, user, Long)
		sess.CreatedAt = base.Add(at)
		if err := s.Create(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			if err := s.Delete(ctx, entriesOf(t, s, user)[sess.TokenHash]); err != nil {
				t.Fatal(err)
			}
			continue
		}
		made = append(made, sess)
	}
	if err := s.Create(ctx, newSession(c, Key("user"), Long)); err != nil {
		t.Fatal(err)
	}
	later := newSession(c, user, Long)
	later.PasswordEpoch = 2
	if err := s.Create(ctx, later); err != nil {
		t.Fatal(err)
	}
	if slice, err := s.Newest(ctx, user, 2, nil, 5); err != nil || len(slice) != 1 || slice[0].TokenHash != later.TokenHash || slice[0].PasswordEpoch != 2 {
		t.Fatalf("the later epoch's entries: %+v %v, want its one session", slice, err)
	}
	slices.SortFunc(made, func(a, b domain.Session) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID(), a.ID())
	})
	var read []domain.Session
	var before *accounts.SessionKey
	for range len(made) {
		slice, err := s.Newest(ctx, user, 1, before, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(slice) == 0 {
			break
		}
		read = append(read, slice...)
		last := slice[len(slice)-1]
		before = &accounts.SessionKey{At: last.CreatedAt, ID: last.ID()}
	}
	if len(read) != len(made) {
		t.Fatalf("slices read %d entries, want the %d live ones of the user", len(read), len(made))
	}
	for i, e := range read {
		if e.TokenHash != made[i].TokenHash || !e.CreatedAt.Equal(made[i].CreatedAt) || e.UserID != user || e.Written == 0 || e.PasswordEpoch != 1 {
			t.Fatalf("entry %d: %+v, want %+v with its write timestamp", i, e, made[i])
		}
	}
}

// sessionEntryByID: Entry finds a user's entry by the session's public
// id, as Entries lists it; another user's id, or a revoked session's, is
// not found.
func sessionEntryByID(t testing.TB, s accounts.SessionStore, c Clock) {
	ctx, user := context.Background(), Key("user")
	sess := newSession(c, user, Long)
	if err := s.Create(ctx, sess); err != nil {
		t.Fatal(err)
	}
	listed := entriesOf(t, s, user)[sess.TokenHash]
	got, err := s.Entry(ctx, user, sess.ID())
	if err != nil || got.TokenHash != sess.TokenHash || !got.CreatedAt.Equal(sess.CreatedAt) || got.Written != listed.Written || got.UserID != user ||
		got.PasswordEpoch != sess.PasswordEpoch {
		t.Fatalf("entry by id: %+v %v, want %+v", got, err, listed)
	}
	if got, err := s.Entry(ctx, Key("user"), sess.ID()); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another user's entry by the id: %+v %v, want ErrNotFound", got, err)
	}
	if err := s.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Entry(ctx, user, sess.ID()); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a revoked session's entry by id: %+v %v, want ErrNotFound", got, err)
	}
	if slice, err := s.Newest(ctx, user, sess.PasswordEpoch, nil, 5); err != nil || len(slice) != 0 {
		t.Fatalf("a revoked session newest first: %+v %v, want none", slice, err)
	}
}
