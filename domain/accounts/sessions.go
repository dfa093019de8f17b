package accounts

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"shelf/domain"
)

// ErrSessionNotFound answers for a session id that is not one of the
// user's live sessions: unknown, malformed, expired or already revoked.
var ErrSessionNotFound = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "No such session."}

// SessionView is a session as its owner's list shows it.
type SessionView struct {
	domain.Session
	// Current: the session of the request that asked.
	Current bool
}

// mayManageSessions checks that p may list and end userID's sessions: the
// user themself, or an active admin (403 for anyone else), for an account
// that exists (404), and returns that account: its access (which
// sessions its password admits) and, for an admin's audit entry, its
// version. alongside, when set, runs beside the read of the account, so
// both cost one round trip; the caller's own account was read with its
// session and is not read again (its version is not needed: a user's
// own action is not audited).
func (a *Service) mayManageSessions(ctx context.Context, p domain.Principal, userID string, alongside func(ctx context.Context)) (managed, error) {
	if p.Anonymous() {
		return managed{}, domain.ErrNoSession
	}
	if !domain.ValidID(userID, domain.UserIDPrefix) {
		return managed{}, domain.ErrUserNotFound
	}
	if p.UserID == userID && p.Account != nil {
		// The session was read with the account, which is visible.
		if alongside != nil {
			alongside(ctx)
		}
		return managed{Access: *p.Account}, nil
	}
	if p.UserID != userID {
		if _, err := a.RequireAdmin(ctx, p); err != nil {
			return managed{}, err
		}
	}
	var u domain.User
	var err error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			u, err = a.users.Get(ctx, userID)
		} else if alongside != nil {
			alongside(ctx)
		}
	})
	if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
		return managed{}, domain.ErrUserNotFound
	}
	return managed{Access: u.Access(), Version: u.Version}, err
}

// managed is the account whose sessions are managed, as
// mayManageSessions read it.
type managed struct {
	domain.Access
	// Version is the account's version when another's (an admin's
	// action) read it: its audit entry's key.
	Version int
}

// auditSessions writes the audit entry of an admin's action on the
// sessions or the factors of u, another's account (the user's own is no
// admin action, and is audited nowhere), before the action: no entry, no
// action, so a failed write refuses it (503) and no admin reads or ends
// another's sessions, or removes another's factor, unrecorded. The action
// writes no account version to decide its entry with, as the account
// changes do, so the entry is keyed by the version read and the action's
// own time, and the audit is its only home: a write whose answer was
// lost, or that lands late, may leave an entry for an attempt refused 503,
// and each attempt let through, a client's retry too, is an entry of its
// own (docs/design/account-audit.md).
func (a *Service) auditSessions(ctx context.Context, p domain.Principal, u managed, action domain.AuditAction) error {
	if p.UserID == u.ID {
		return nil
	}
	e := domain.AuditEntry{UserID: u.ID, At: a.now(), Version: u.Version, Action: action, Actor: p.UserID, Via: domain.ViaAPI, From: p.From}
	_, err := a.audit.RecordNew(ctx, e)
	return err
}

// maxSessionRefills bounds the reads a page of sessions makes past its
// first when index entries without a live session (a login that failed
// after writing its entry, a revocation that stopped between its two
// deletes) were dropped.
const maxSessionRefills = 8

// ListSessions answers a page of userID's live sessions, newest first
// (ties by id, descending), for the user themself or an active admin. The
// sessions the account admits are those opened at its password epoch
// and the one it names (PasswordSession, opened at an older epoch): it
// reads one slice of the first, the epoch's index newest first, then the
// slice's sessions (and the named one's) at once; an entry whose session
// is gone, holds nothing but a late last-seen write, or is no longer
// admitted is left out, and the page refilled from the next slice, at
// most maxSessionRefills times. So a page costs the same however many
// sessions the user has, and the sessions an epoch's move stopped are
// never read again. An admin's list of another's sessions is audited
// before any session is read (auditSessions).
func (a *Service) ListSessions(ctx context.Context, p domain.Principal, userID, cursor string, limit int) (domain.Page[SessionView], error) {
	account, err := a.mayManageSessions(ctx, p, userID, nil)
	if err != nil {
		return domain.Page[SessionView]{}, err
	}
	after, err := decodeSessionCursor(cursor)
	if err != nil {
		return domain.Page[SessionView]{}, err
	}
	if err := a.auditSessions(ctx, p, account, domain.AuditSessionsListed); err != nil {
		return domain.Page[SessionView]{}, err
	}
	l := sessionLister{a: a, p: p, account: account.Access, now: a.cfg.Now()}
	asked := limit + 1
	chunk, err := a.sessions.Newest(ctx, userID, account.PasswordEpoch, after, asked)
	if err != nil {
		return domain.Page[SessionView]{}, err
	}
	var out []listedSession
	for round := 0; ; round++ {
		var floor *SessionKey // the chunk's last key when more may follow
		if len(chunk) == asked {
			k := keyOf(chunk[len(chunk)-1])
			floor = &k
		}
		found, err := l.admitted(ctx, chunk, after, floor)
		if err != nil {
			return domain.Page[SessionView]{}, err
		}
		out = append(out, found...)
		if len(out) > limit || floor == nil {
			break // a page and one more, or the index's end
		}
		if round == maxSessionRefills {
			// Too many entries without a session: answer what was found,
			// and let the next page go on after the last entry read.
			return domain.Page[SessionView]{Items: viewsOf(out), Next: floor.cursor()}, nil
		}
		after, asked = floor, limit+1-len(out)
		if chunk, err = a.sessions.Newest(ctx, userID, account.PasswordEpoch, after, asked); err != nil {
			return domain.Page[SessionView]{}, err
		}
	}
	page := domain.PageOf(out, limit, func(last listedSession) string { return last.key.cursor() })
	return domain.Page[SessionView]{Items: viewsOf(page.Items), Next: page.Next}, nil
}

// sessionLister reads the sessions of a list's slices, and the session
// the account names (its PasswordSession) with the first.
type sessionLister struct {
	a       *Service
	p       domain.Principal
	account domain.Access
	now     time.Time
	// named is the account's named session once read (namedRead; nil:
	// none, or gone), namedDone once placed in the list or found on a
	// page before.
	named     *domain.Session
	namedRead bool
	namedDone bool
}

// admitted reads the sessions of chunk (entries in the order of the
// list) and answers those the account admits, in the list's order, with
// the named session where it falls: after after and before floor (nil:
// the end of the list).
func (l *sessionLister) admitted(ctx context.Context, chunk []domain.Session, after, floor *SessionKey) ([]listedSession, error) {
	hashes := make([]string, 0, len(chunk)+1)
	for _, e := range chunk {
		hashes = append(hashes, e.TokenHash)
	}
	if !l.namedRead && l.account.PasswordSession != "" {
		hashes = append(hashes, l.account.PasswordSession)
	}
	live, err := l.a.sessions.GetMany(ctx, hashes)
	if err != nil {
		return nil, err
	}
	if !l.namedRead {
		l.namedRead = true
		if s, ok := live[l.account.PasswordSession]; ok && l.account.PasswordSession != "" {
			l.named = &s
		}
	}
	var out []listedSession
	take := func(s domain.Session, key SessionKey) {
		if s.UserID != l.account.ID || !l.now.Before(s.ExpiresAt) || !passwordAdmits(l.account, s) {
			return
		}
		out = append(out, listedSession{key: key, view: SessionView{Session: s, Current: s.TokenHash == l.p.Session.TokenHash}})
	}
	var namedKey SessionKey
	placeNamed := false
	if l.named != nil && !l.namedDone {
		namedKey = SessionKey{At: l.named.CreatedAt.Truncate(time.Millisecond), ID: l.named.ID()}
		inRange := (after == nil || namedKey.compare(*after) < 0) && (floor == nil || namedKey.compare(*floor) > 0)
		placeNamed = inRange && l.named.PasswordEpoch != l.account.PasswordEpoch
		if placeNamed || (after != nil && namedKey.compare(*after) >= 0) {
			l.namedDone = true // placed now, or on a page before
		}
	}
	for _, e := range chunk {
		key := keyOf(e)
		if placeNamed && namedKey.compare(key) > 0 {
			take(*l.named, namedKey)
			placeNamed = false
		}
		if s, ok := live[e.TokenHash]; ok {
			take(s, key)
		}
	}
	if placeNamed {
		take(*l.named, namedKey)
	}
	return out, nil
}

// SessionKey is a session's place in its user's list: creation, then id
// (its public id), both descending.
type SessionKey struct {
	At time.Time
	ID string
}

// compare orders keys by creation, then id (the list runs the other way).
func (k SessionKey) compare(o SessionKey) int {
	if c := k.At.Compare(o.At); c != 0 {
		return c
	}
	return strings.Compare(k.ID, o.ID)
}

// keyOf is the place of an index entry.
func keyOf(e domain.Session) SessionKey { return SessionKey{At: e.CreatedAt, ID: e.ID()} }

// cursor is the cursor of the page after k: its creation in µs and its id.
func (k SessionKey) cursor() string {
	return domain.EncodeCursor(strconv.FormatInt(k.At.UnixMicro(), 10), k.ID)
}

// decodeSessionCursor reads a cursor of ListSessions; nil for none.
func decodeSessionCursor(cursor string) (*SessionKey, error) {
	if cursor == "" {
		return nil, nil
	}
	f, err := domain.DecodeCursor(cursor, 2)
	if err != nil {
		return nil, err
	}
	us, err := strconv.ParseInt(f[0], 10, 64)
	at := time.UnixMicro(us).UTC()
	// Go's zero time is refused, as domain.CursorTime refuses it: the
	// driver sends it as an empty value, no time a session has.
	if err != nil || f[0] != strconv.FormatInt(us, 10) || at.IsZero() || !domain.ValidID(f[1], domain.SessionIDPrefix) {
		return nil, domain.ErrBadCursor
	}
	return &SessionKey{At: at, ID: f[1]}, nil
}

type listedSession struct {
	key  SessionKey
	view SessionView
}

func viewsOf(l []listedSession) []SessionView {
	out := make([]SessionView, len(l))
	for i, s := range l {
		out[i] = s.view
	}
	return out
}

// RevokeSession ends one of userID's sessions, named by its id, for the
// user themself (their current session too) or an active admin. The
// entry is read by its id (beside the account, one round trip); an id
// that names no entry of the user's is ErrSessionNotFound: unknown,
// expired, or already revoked, so the retry of a revocation whose answer
// was lost answers 404 once its deletes have landed, and 204 (finishing
// them) while the entry is still there. An admin's revocation of
// another's session is audited before it (auditSessions); an unknown id
// ends nothing and is not.
func (a *Service) RevokeSession(ctx context.Context, p domain.Principal, userID, sessionID string) error {
	valid := domain.ValidID(sessionID, domain.SessionIDPrefix)
	var entry domain.Session
	var err error
	account, aerr := a.mayManageSessions(ctx, p, userID, func(ctx context.Context) {
		if valid {
			entry, err = a.sessions.Entry(ctx, userID, sessionID)
		}
	})
	switch {
	case aerr != nil:
		return aerr
	case !valid || errors.Is(err, domain.ErrNotFound):
		return ErrSessionNotFound
	case err != nil:
		return err
	}
	if err := a.auditSessions(ctx, p, account, domain.AuditSessionRevoked); err != nil {
		return err
	}
	return a.sessions.Delete(ctx, entry)
}

// RevokeSessions ends every session of userID, for the user themself or an
// active admin; exceptCurrent keeps the session of the request (for a user
// signing out everywhere else; an admin's own session is never among
// another user's). It moves the account's password epoch on by
// compare-and-set, naming the kept session (as a password change names
// its own): in that write every other session stops working, a login in
// flight included, however many there are; their rows are deleted after
// the answer (endSessions). The owner's request acts only while its
// session still works on the row it writes over (stillAdmits). Idempotent:
// a retry moves the epoch again. An
// admin's revocation of another's sessions is audited before it
// (auditSessions), each attempt.
func (a *Service) RevokeSessions(ctx context.Context, p domain.Principal, userID string, exceptCurrent bool) error {
	account, err := a.mayManageSessions(ctx, p, userID, nil)
	if err != nil {
		return err
	}
	if err := a.auditSessions(ctx, p, account, domain.AuditSessionsRevoked); err != nil {
		return err
	}
	keep := ""
	if exceptCurrent && p.UserID == userID {
		keep = p.Session.TokenHash
	}
	update := a.updateAccount
	if p.UserID != userID {
		update = a.updateByAdmin // its user cannot hold it back
	}
	_, err = update(ctx, userID, func(u domain.User) (domain.User, bool, error) {
		if !u.Visible() {
			return u, false, domain.ErrUserNotFound
		}
		if p.UserID == userID {
			if ok, err := a.stillAdmits(ctx, u.Access(), p.Session); err != nil || !ok {
				// The caller's session no longer works (a suspension or a
				// reset landed meanwhile): naming it would bring it back,
				// and a new epoch would end the sessions opened since (the
				// reset's own) on the authority of one that ended.
				return u, false, cmp.Or[error](err, domain.ErrNoSession)
			}
		}
		u.PasswordEpoch, u.PasswordSession = u.PasswordEpoch+1, keep
		return u, true, nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return domain.ErrUserNotFound
	}
	return a.endSessions(ctx, err, userID, "a revocation")
}

// sweepBatch is how many sessions a sweep reads, and deletes, at once.
const sweepBatch = 16

// stoppedBy reports whether the account as read (access) no longer
// admits s and never will: s carries an older epoch and is not the
// session the account names. A session at a later epoch than the read
// is newer than it (a reset's, a login's since) and is spared.
func stoppedBy(access domain.Access, s domain.Session) bool {
	return s.PasswordEpoch < access.PasswordEpoch && s.TokenHash != access.PasswordSession
}

// sweepSessions deletes, after the answer (afterAnswerSweep: apart from
// the mail jobs, one at a time per account), the rows of userID's sessions its account
// no longer admits: those a new password epoch stopped. Only those: a
// session opened since (a reset's own, a new login) is admitted and
// stays, and a session once not admitted never is again (the epoch only
// grows, and only an admitted session can name itself PasswordSession by
// a change). An index entry whose session row is missing is left: it may
// be a login's, written before its session. What a sweep misses (its
// process stopped, a store call failed) works no more than before it, is
// not listed (ListSessions checks each session the same way), and expires
// with its TTL; the next sweep of the account deletes it.
func (a *Service) sweepSessions(ctx context.Context, userID, what string) {
	a.afterAnswerSweep(ctx, "sessions/"+userID, "deleting the sessions "+what+" ended", false, func(ctx context.Context) error {
		access, err := a.users.Access(ctx, userID)
		if errors.Is(err, domain.ErrNotFound) {
			return nil // gone: its sessions work no more, and expire
		}
		if err != nil {
			return err
		}
		entries, err := a.sessions.Entries(ctx, userID)
		if err != nil {
			return err
		}
		for start := 0; start < len(entries); start += sweepBatch {
			chunk := entries[start:min(start+sweepBatch, len(entries))]
			hashes := make([]string, len(chunk))
			for i, e := range chunk {
				hashes[i] = e.TokenHash
			}
			live, err := a.sessions.GetMany(ctx, hashes)
			if err != nil {
				return err
			}
			var stopped []domain.Session
			for _, e := range chunk {
				if s, ok := live[e.TokenHash]; ok && stoppedBy(access, s) {
					s.UserID, s.Written = userID, max(s.Written, e.Written)
					stopped = append(stopped, s)
				}
			}
			errs := make([]error, len(stopped))
			domain.Parallel(ctx, len(stopped), func(ctx context.Context, i int) {
				errs[i] = a.sessions.Delete(ctx, stopped[i])
			})
			if err := errors.Join(errs...); err != nil {
				return err
			}
		}
		return nil
	})
}

// Sightings: when sessions were last seen.

// maxSightings bounds the sightings this process writes at once; beyond
// it one is dropped, and a later request of that session records it.
const maxSightings = 64

// sightingTimeout bounds one sighting's write (it runs after the answer,
// on a context of its own).
const sightingTimeout = 10 * time.Second

// sightings are the sessions whose sighting this process is writing: one
// write per session at a time, however many of its requests arrive
// meanwhile.
type sightings struct {
	mu       sync.Mutex
	inFlight map[string]bool
}

func newSightings() *sightings { return &sightings{inFlight: map[string]bool{}} }

// start claims the session's sighting; false when one is in flight or too
// many are.
func (s *sightings) start(hash string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[hash] || len(s.inFlight) >= maxSightings {
		return false
	}
	s.inFlight[hash] = true
	return true
}

func (s *sightings) done(hash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inFlight, hash)
}

// sighted records, off the request's path, that s was seen now, when what
// the store holds is at least SeenInterval old: a session in use costs one
// write per interval, not one per request. The write carries the sighting's
// time as its timestamp (Touch), so sightings landing late or out of order
// keep the latest, and one landing after a revocation never brings the
// session back. A failure is logged and forgotten: the next request of the
// session tries again.
func (a *Service) sighted(ctx context.Context, s domain.Session) {
	now := a.now()
	if now.Sub(s.Seen()) < a.cfg.SeenInterval || !a.seen.start(s.TokenHash) {
		return
	}
	bg := context.WithoutCancel(ctx)
	run := func() {
		defer a.seen.done(s.TokenHash)
		ctx, cancel := context.WithTimeout(bg, sightingTimeout)
		defer cancel()
		if err := a.sessions.Touch(ctx, s, now); err != nil {
			a.log.Warn(ctx, "recording when a session was seen failed; a later request records it",
				"user", s.UserID, "error", err.Error())
		}
	}
	a.background(run)
}
