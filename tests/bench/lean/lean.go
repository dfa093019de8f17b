// Package lean is the baseline shelf is measured against: the leanest HTTP
// service one could write here doing exactly shelf's statements for each
// measured operation, in the same order and with the same parallelism,
// through gocql and encoding/json, with no middleware, no logging and no
// metrics. Store holds the operations (the raw side of `make bench` calls
// them with no HTTP at all); Handler serves them (cmd/leanserver).
//
// It keeps shelf's answers (the same JSON, the same statuses for the
// paths measured) so the comparison is like for like; TestLeanMatchesShelf
// checks that. It is not a second implementation: errors are plain 404s
// and 500s, and only the inputs the benchmarks send are handled.
package lean

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"shelf/internal/password"
)

// The statements, as shelf's repository writes them.
const (
	userCols         = `username, username_key, email, email_key, display_name, password_hash, roles, status, created_at, updated_at, version, write_id, suspended_at, suspension_bucket, suspension_reason, suspended_by, suspended_until`
	userSelect       = `SELECT id, ` + userCols + `, email_verified_at FROM users WHERE id = ?`
	userInsert       = `INSERT INTO users (id, ` + userCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	userActivate     = `UPDATE users USING TTL 0 SET username = ?, username_key = ?, email = ?, email_key = ?, display_name = ?, password_hash = ?, roles = ?, status = ?, created_at = ?, updated_at = ?, version = ?, write_id = ?, suspended_at = ?, suspension_bucket = ?, suspension_reason = ?, suspended_by = ?, suspended_until = ? WHERE id = ? IF status = 'pending'`
	claimSelect      = `SELECT key, user_id, op, state, claimed_at, base_version FROM %s WHERE key = ?`
	claimInsert      = `INSERT INTO %s (key, user_id, op, state, claimed_at, base_version) VALUES (?, ?, ?, 'pending', ?, ?) IF NOT EXISTS USING TTL ?`
	claimCommit      = `UPDATE %s USING TTL 0 SET user_id = ?, op = ?, state = 'committed', claimed_at = ?, base_version = ? WHERE key = ? IF user_id = ? AND op = ?`
	sessionSelect    = `SELECT token_hash, user_id, created_at, expires_at, WRITETIME(user_id) AS written FROM sessions WHERE token_hash = ?`
	sessionInsert    = `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?`
	sessionIndex     = `INSERT INTO sessions_by_user (user_id, token_hash, expires_at) VALUES (?, ?, ?) USING TIMESTAMP ? AND TTL ?`
	groupSelect      = `SELECT id, name, name_key, display_name, description, max_members, member_count, manager_count, created_by, created_at, updated_at, status, pending_user, pending_role, version, write_id FROM groups WHERE id = ?`
	memberRole       = `SELECT role FROM group_members WHERE group_id = ? AND user_id = ?`
	libSlice         = `SELECT last_modified, content_id, name, visibility, version FROM library_by_principal WHERE principal_id = ? AND bucket = ? LIMIT ?`
	libSliceAfter    = `SELECT last_modified, content_id, name, visibility, version FROM library_by_principal WHERE principal_id = ? AND bucket = ? AND (last_modified, content_id) < (?, ?) LIMIT ?`
	libSliceAsc      = `SELECT last_modified, content_id, name, visibility, version FROM library_by_principal WHERE principal_id = ? AND bucket = ? ORDER BY last_modified ASC, content_id ASC LIMIT ?`
	libSliceAscAfter = `SELECT last_modified, content_id, name, visibility, version FROM library_by_principal WHERE principal_id = ? AND bucket = ? AND (last_modified, content_id) > (?, ?) ORDER BY last_modified ASC, content_id ASC LIMIT ?`
	indexSelect      = `SELECT content_id, role, version, last_modified, name, visibility FROM library_index WHERE principal_id = ? AND content_id IN ?`
	contentStates    = `SELECT id, name, visibility, last_modified, deleted FROM content WHERE id IN ?`
	buckets          = `SELECT bucket FROM status_buckets WHERE status = ? LIMIT ?`
	bucketsBefore    = `SELECT bucket FROM status_buckets WHERE status = ? AND bucket <= ? LIMIT ?`
	suspendedPage    = `SELECT bucket, occurred_on, user_id, username, reason, actor, until FROM users_by_status WHERE bucket = ? AND status = ? LIMIT ?`
	suspendedAfter   = `SELECT bucket, occurred_on, user_id, username, reason, actor, until FROM users_by_status WHERE bucket = ? AND status = ? AND (occurred_on, user_id) < (?, ?) LIMIT ?`
	sessionTTL       = 30 * 24 * time.Hour
	signupLease      = 10 * time.Second
	statusSuspended  = "suspended"
)

// ErrNotFound is a 404; every other error a 500.
var ErrNotFound = errors.New("not found")

// ErrUnauthorized is a 401 (a token that opens no session).
var ErrUnauthorized = errors.New("unauthorized")

// Store runs the operations against one session.
type Store struct {
	S      *gocql.Session
	Hasher *password.Hasher
	// Checked checks every row of a page as shelf checks a row that is not
	// lean: the index read beside the read of the items, one round trip
	// after the slice. Unset, a page is the seed's: one slice, shown as
	// read. The lean server never sets it; `make bench` sets it to price
	// those reads (docs/design/cost-model.md#items-read-cost).
	Checked bool
}

// User is the User schema of shelf's openapi.yaml.
type User struct {
	ID          string `json:"id"`
	Username    string `json:"username"`
	DisplayName string `json:"displayName"`
	Email       string `json:"email,omitempty"`
	// EmailVerified is shown with the email (the user and admins).
	EmailVerified *bool  `json:"emailVerified,omitempty"`
	Status        string `json:"status,omitempty"`
	// Roles are shown with the email too: nil is left out.
	Roles     []string  `json:"roles,omitzero"`
	CreatedAt time.Time `json:"createdAt"`
}

// account is a users row as the operations need it.
type account struct {
	User
	usernameKey, emailKey, hash string
	suspendedAt, until          time.Time
}

func (a account) visible() bool { return a.Status == "active" || a.Status == statusSuspended }

// blocked: a suspension in force.
func (a account) blocked(now time.Time) bool {
	return a.Status == statusSuspended && !a.suspendedAt.IsZero() && (a.until.IsZero() || now.Before(a.until))
}

// public is what a stranger sees of the account.
func (a account) public() User {
	u := a.User
	u.Email, u.Status, u.EmailVerified, u.Roles = "", "", nil, nil
	return u
}

func (s *Store) user(ctx context.Context, id string) (account, error) {
	var a account
	var updated time.Time
	var version int
	var writeID, bucket, reason, by string
	var verifiedAt time.Time
	err := s.S.Query(userSelect, id).WithContext(ctx).Scan(&a.ID, &a.Username, &a.usernameKey, &a.Email, &a.emailKey,
		&a.DisplayName, &a.hash, &a.Roles, &a.Status, &a.CreatedAt, &updated, &version, &writeID,
		&a.suspendedAt, &bucket, &reason, &by, &a.until, &verifiedAt)
	verified := !verifiedAt.IsZero()
	a.EmailVerified = &verified
	if errors.Is(err, gocql.ErrNotFound) {
		return a, ErrNotFound
	}
	if a.Roles == nil {
		a.Roles = []string{}
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, err
}

// GetUser is GET /v1/users/{id}, anonymous: one read.
func (s *Store) GetUser(ctx context.Context, id string) (User, error) {
	if !strings.HasPrefix(id, "u_") {
		return User{}, ErrNotFound
	}
	a, err := s.user(ctx, id)
	if err == nil && !a.visible() {
		err = ErrNotFound
	}
	return a.public(), err
}

// byKey follows a committed claim to its account: two reads in turn.
func (s *Store) byKey(ctx context.Context, table, key string) (account, error) {
	var k, owner, op, state string
	var at time.Time
	var base int
	err := s.S.Query(strings.Replace(claimSelect, "%s", table, 1), key).WithContext(ctx).Scan(&k, &owner, &op, &state, &at, &base)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && state != "committed") {
		return account{}, ErrNotFound
	}
	if err != nil {
		return account{}, err
	}
	a, err := s.user(ctx, owner)
	if err == nil && (!a.visible() || (table == "usernames" && a.usernameKey != key) || (table == "emails" && a.emailKey != key)) {
		err = ErrNotFound
	}
	return a, err
}

// ByUsername is GET /v1/users/by-username/{username}, anonymous.
func (s *Store) ByUsername(ctx context.Context, username string) (User, error) {
	a, err := s.byKey(ctx, "usernames", strings.ToLower(username))
	return a.public(), err
}

// Caller is an authenticated request's session and account.
type Caller struct {
	ID    string
	admin bool
}

// Authenticate reads the session and the account the token names at once.
func (s *Store) Authenticate(ctx context.Context, token string) (*Caller, error) {
	if token == "" {
		return nil, nil
	}
	id, _, ok := strings.Cut(token, ".")
	if !ok {
		return nil, ErrUnauthorized
	}
	sum := sha256.Sum256([]byte(token))
	var a account
	var sessUser string
	var created, expires time.Time
	var written int64
	var sessErr, userErr error
	both(func() {
		var hash string
		sessErr = s.S.Query(sessionSelect, hex.EncodeToString(sum[:])).WithContext(ctx).Scan(&hash, &sessUser, &created, &expires, &written)
	}, func() { a, userErr = s.user(ctx, id) })
	for _, err := range []error{sessErr, userErr} {
		if errors.Is(err, gocql.ErrNotFound) || errors.Is(err, ErrNotFound) {
			return nil, ErrUnauthorized
		}
		if err != nil {
			return nil, err
		}
	}
	now := time.Now()
	if sessUser != a.ID || !now.Before(expires) || !a.visible() || a.blocked(now) {
		return nil, ErrUnauthorized
	}
	admin := false
	for _, r := range a.Roles {
		admin = admin || r == "admin"
	}
	return &Caller{ID: a.ID, admin: admin && a.Status == "active"}, nil
}

// both runs f and g at once and waits for the two.
func both(f, g func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); g() }()
	f()
	wg.Wait()
}

// Item is the LibraryItem schema.
type Item struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Visibility   string    `json:"visibility"`
	LastModified time.Time `json:"lastModified"`
	version      int
}

// Page is every list.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// Library is GET /v1/{users,groups}/{id}/library: the checks that choose
// the bucket beside the slice of the bucket most callers get (the seed's
// page: the slice is the page); the slice again when the guess was wrong.
// Oldest first (order "oldest") the slices are reversed and the run ends
// at its first page's time, which its cursors carry (o|until|ms|id).
func (s *Store) Library(ctx context.Context, c *Caller, principal, order, cursor string, limit int) (Page[Item], error) {
	var after *Item
	oldest := order == "oldest"
	until := time.Now().UTC().Truncate(time.Millisecond)
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		f := strings.Split(string(raw), "|")
		if oldest && len(f) == 4 {
			u, uerr := strconv.ParseInt(f[1], 10, 64)
			until, f, err = time.UnixMilli(u).UTC(), f[2:], errors.Join(err, uerr)
		}
		if len(f) != 2 {
			return Page[Item]{}, ErrNotFound
		}
		n, perr := strconv.ParseInt(f[0], 10, 64)
		if err != nil || perr != nil {
			return Page[Item]{}, ErrNotFound
		}
		after = &Item{ID: f[1], LastModified: time.UnixMilli(n).UTC()}
	}
	if !oldest {
		until = time.Time{}
	}
	guess := "loggedin"
	switch {
	case c == nil:
		guess = "public"
	case c.ID == principal, strings.HasPrefix(principal, "g_"):
		guess = "private"
	}
	var bucket string
	var items []Item
	var bucketErr, pageErr error
	both(func() { bucket, bucketErr = s.bucketFor(ctx, c, principal) },
		func() { items, pageErr = s.readPage(ctx, principal, guess, until, after, limit+1) })
	if bucketErr != nil {
		return Page[Item]{}, bucketErr
	}
	if bucket != guess {
		items, pageErr = s.readPage(ctx, principal, bucket, until, after, limit+1)
	}
	if pageErr != nil {
		return Page[Item]{}, pageErr
	}
	p := Page[Item]{Items: items}
	if len(items) > limit {
		p.Items = items[:limit]
		last := p.Items[limit-1]
		next := strconv.FormatInt(last.LastModified.UnixMilli(), 10) + "|" + last.ID
		if oldest {
			next = "o|" + strconv.FormatInt(until.UnixMilli(), 10) + "|" + next
		}
		p.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(next))
	}
	return p, nil
}

func (s *Store) bucketFor(ctx context.Context, c *Caller, principal string) (string, error) {
	switch {
	case strings.HasPrefix(principal, "u_"):
		a, err := s.user(ctx, principal)
		if err == nil && !a.visible() {
			err = ErrNotFound
		}
		if err != nil {
			return "", err
		}
		if c != nil && c.ID == principal {
			return "private", nil
		}
	case strings.HasPrefix(principal, "g_"):
		// The group and the caller's membership, read at once.
		var id, name, key, display, description, by, status, pendingUser, pendingRole, writeID, role string
		var maxMembers, members, managers, version int
		var created, updated time.Time
		var err error
		roleErr := gocql.ErrNotFound
		group := func() {
			err = s.S.Query(groupSelect, principal).WithContext(ctx).Scan(&id, &name, &key, &display, &description,
				&maxMembers, &members, &managers, &by, &created, &updated, &status, &pendingUser, &pendingRole, &version, &writeID)
		}
		if c == nil {
			group()
		} else {
			both(group, func() { roleErr = s.S.Query(memberRole, principal, c.ID).WithContext(ctx).Scan(&role) })
		}
		if errors.Is(err, gocql.ErrNotFound) || (err == nil && status != "active") {
			return "", ErrNotFound
		}
		if err != nil {
			return "", err
		}
		if roleErr == nil {
			return "private", nil
		}
		if !errors.Is(roleErr, gocql.ErrNotFound) {
			return "", roleErr
		}
	default:
		return "", ErrNotFound
	}
	switch {
	case c == nil:
		return "public", nil
	case c.admin:
		return "private", nil
	}
	return "loggedin", nil
}

// readPage reads want rows of one bucket: the seed's page, one slice.
// Checked, it keeps only the rows the index and the items' own rows agree
// with (the index read beside the items' read after the slice; refilled
// while rows were dropped).
func (s *Store) readPage(ctx context.Context, principal, bucket string, until time.Time, after *Item, want int) ([]Item, error) {
	out := make([]Item, 0, want)
	first, next := libSlice, libSliceAfter
	if !until.IsZero() {
		first, next = libSliceAsc, libSliceAscAfter
	}
	for refill := 0; len(out) < want && refill < 8; refill++ {
		need := want - len(out)
		q := s.S.Query(first, principal, bucket, need)
		if after != nil {
			q = s.S.Query(next, principal, bucket, after.LastModified, after.ID, need)
		}
		iter := q.WithContext(ctx).Iter()
		var rows []Item
		var it Item
		for iter.Scan(&it.LastModified, &it.ID, &it.Name, &it.Visibility, &it.version) {
			it.LastModified = it.LastModified.UTC()
			rows = append(rows, it)
		}
		if err := iter.Close(); err != nil {
			return nil, err
		}
		end := len(rows) < need
		for i, r := range rows {
			if !until.IsZero() && !r.LastModified.Before(until) {
				rows, end = rows[:i], true // past the run's end
				break
			}
		}
		if len(rows) == 0 {
			break
		}
		if !s.Checked {
			out = append(out, rows...)
			after = &rows[len(rows)-1]
			if end {
				break
			}
			continue
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		var versions map[string]int
		var live map[string]Item
		var indexErr, liveErr error
		both(func() { versions, indexErr = s.versions(ctx, principal, ids) },
			func() { live, liveErr = s.states(ctx, ids) })
		if err := errors.Join(indexErr, liveErr); err != nil {
			return nil, err
		}
		for _, r := range rows {
			v, ok := versions[r.ID]
			c, found := live[r.ID]
			agrees := found && c.Name == r.Name && c.Visibility == r.Visibility &&
				c.LastModified.Equal(r.LastModified) && visibleIn(bucket, c.Visibility)
			if ok && v == r.version && agrees {
				out = append(out, r)
			}
		}
		after = &rows[len(rows)-1]
		if end {
			break
		}
	}
	return out, nil
}

// versions reads the index entries of the page's items: their versions.
func (s *Store) versions(ctx context.Context, principal string, ids []string) (map[string]int, error) {
	out := make(map[string]int, len(ids))
	iter := s.S.Query(indexSelect, principal, ids).WithContext(ctx).Iter()
	var id, role, name, vis string
	var version int
	var lm time.Time
	for iter.Scan(&id, &role, &version, &lm, &name, &vis) {
		out[id] = version
	}
	return out, iter.Close()
}

// states reads the page's items as they stand (deleted ones left out).
func (s *Store) states(ctx context.Context, ids []string) (map[string]Item, error) {
	out := make(map[string]Item, len(ids))
	iter := s.S.Query(contentStates, ids).WithContext(ctx).Iter()
	var it Item
	var deleted bool
	for iter.Scan(&it.ID, &it.Name, &it.Visibility, &it.LastModified, &deleted) {
		if !deleted {
			it.LastModified = it.LastModified.UTC()
			out[it.ID] = it
		}
	}
	return out, iter.Close()
}

// visibleIn reports whether viewers of bucket may see an item of
// visibility v.
func visibleIn(bucket, v string) bool {
	return bucket == "private" || v == "public" || (bucket == "loggedin" && v == "loggedin")
}

// Suspension is one entry of the suspended list.
type Suspension struct {
	UserID      string     `json:"userId"`
	Username    string     `json:"username"`
	Reason      string     `json:"reason"`
	SuspendedAt time.Time  `json:"suspendedAt"`
	SuspendedBy string     `json:"suspendedBy"`
	Until       *time.Time `json:"until,omitempty"`
	bucket      string
}

// Suspended is GET /v1/suspensions (admins): the bucket index, then one
// slice per bucket until the page is full, beside the admin check (which
// the session's account read already answered).
func (s *Store) Suspended(ctx context.Context, c *Caller, cursor string, limit int) (Page[Suspension], error) {
	if c == nil || !c.admin {
		return Page[Suspension]{}, ErrUnauthorized
	}
	var after *Suspension
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		f := strings.Split(string(raw), "|")
		if err != nil || len(f) != 3 {
			return Page[Suspension]{}, ErrNotFound
		}
		ms, _ := strconv.ParseInt(f[1], 10, 64)
		after = &Suspension{bucket: f[0], SuspendedAt: time.UnixMilli(ms).UTC(), UserID: f[2]}
	}
	want := limit + 1
	out := make([]Suspension, 0, want)
	var upTo *string
	if after != nil {
		upTo = &after.bucket
	}
	skipUpTo := false
	for len(out) < want {
		n := want - len(out) + 1
		q := s.S.Query(buckets, statusSuspended, n)
		if upTo != nil {
			q = s.S.Query(bucketsBefore, statusSuspended, *upTo, n)
		}
		iter := q.WithContext(ctx).Iter()
		var bs []string
		var b string
		for iter.Scan(&b) {
			bs = append(bs, b)
		}
		if err := iter.Close(); err != nil {
			return Page[Suspension]{}, err
		}
		for _, b := range bs {
			if len(out) >= want || (skipUpTo && b == *upTo) {
				continue
			}
			q := s.S.Query(suspendedPage, b, statusSuspended, want-len(out))
			if after != nil && b == after.bucket {
				q = s.S.Query(suspendedAfter, b, statusSuspended, after.SuspendedAt, after.UserID, want-len(out))
			}
			iter := q.WithContext(ctx).Iter()
			var r Suspension
			var until time.Time
			for iter.Scan(&r.bucket, &r.SuspendedAt, &r.UserID, &r.Username, &r.Reason, &r.SuspendedBy, &until) {
				r.SuspendedAt, r.Until = r.SuspendedAt.UTC(), nil
				if !until.IsZero() {
					u := until.UTC()
					r.Until = &u
				}
				out = append(out, r)
			}
			if err := iter.Close(); err != nil {
				return Page[Suspension]{}, err
			}
		}
		if len(bs) < n {
			break
		}
		upTo, skipUpTo = &bs[len(bs)-1], true
	}
	p := Page[Suspension]{Items: out}
	if len(out) > limit {
		p.Items = out[:limit]
		last := p.Items[limit-1]
		p.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(last.bucket + "|" + strconv.FormatInt(last.SuspendedAt.UnixMilli(), 10) + "|" + last.UserID))
	}
	return p, nil
}

// Signup is POST /v1/users: the password hash, then [claim username ∥
// claim email ∥ pending account], [commit ∥ commit], activate.
func (s *Store) Signup(ctx context.Context, username, email, pw string) (User, error) {
	hash, err := s.Hasher.Hash(ctx, pw)
	if err != nil {
		return User{}, err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	unverified := false
	a := account{User: User{ID: NewID("u_"), Username: username, DisplayName: username, Email: email,
		EmailVerified: &unverified, Status: "active", Roles: []string{}, CreatedAt: now}, usernameKey: strings.ToLower(username), emailKey: strings.ToLower(email), hash: hash}
	writeID := NewID("w_")
	cols := func(status string) []any {
		return []any{a.Username, a.usernameKey, a.Email, a.emailKey, a.DisplayName, a.hash, a.Roles, status,
			now, now, 1, writeID, gocql.UnsetValue, gocql.UnsetValue, gocql.UnsetValue, gocql.UnsetValue, gocql.UnsetValue}
	}
	lease := int(signupLease / time.Second)
	claims := [][2]string{{"usernames", a.usernameKey}, {"emails", a.emailKey}}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.cas(ctx, strings.Replace(claimInsert, "%s", c[0], 1), c[1], a.ID, a.ID, now, 0, lease)
		}()
	}
	errs[2] = s.cas(ctx, userInsert, append(append([]any{a.ID}, cols("pending")...), lease)...)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return User{}, err
	}
	both(func() {
		errs[0] = s.cas(ctx, strings.Replace(claimCommit, "%s", "usernames", 1), a.ID, a.ID, now, 0, a.usernameKey, a.ID, a.ID)
	}, func() {
		errs[1] = s.cas(ctx, strings.Replace(claimCommit, "%s", "emails", 1), a.ID, a.ID, now, 0, a.emailKey, a.ID, a.ID)
	})
	if err := errors.Join(errs[:2]...); err != nil {
		return User{}, err
	}
	if err := s.cas(ctx, userActivate, append(cols("active"), a.ID)...); err != nil {
		return User{}, err
	}
	return a.User, nil
}

// errNotApplied: a conditional write that did not apply.
var errNotApplied = errors.New("not applied")

func (s *Store) cas(ctx context.Context, stmt string, args ...any) error {
	applied, err := s.S.Query(stmt, args...).WithContext(ctx).MapScanCAS(map[string]any{})
	if err == nil && !applied {
		err = errNotApplied
	}
	return err
}

// Session is a login's answer.
type Session struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
	User      User      `json:"user"`
}

// Login is POST /v1/sessions: claim, account, password check, session
// index entry, session, account again.
func (s *Store) Login(ctx context.Context, login, pw string) (Session, error) {
	table := "usernames"
	if strings.Contains(login, "@") {
		table = "emails"
	}
	a, err := s.byKey(ctx, table, strings.ToLower(login))
	if err != nil {
		return Session{}, err
	}
	ok, _, err := s.Hasher.Verify(ctx, pw, a.hash)
	if err != nil || !ok || a.blocked(time.Now()) {
		return Session{}, ErrUnauthorized
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	token := a.ID + "." + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(token))
	hash := hex.EncodeToString(sum[:])
	now := time.Now().UTC()
	expires := now.Add(sessionTTL)
	ts, ttl := now.UnixMicro(), int(sessionTTL/time.Second)
	if err := s.S.Query(sessionIndex, a.ID, hash, expires, ts, ttl).WithContext(ctx).Exec(); err != nil {
		return Session{}, err
	}
	if err := s.S.Query(sessionInsert, hash, a.ID, now, expires, ts, ttl).WithContext(ctx).Exec(); err != nil {
		return Session{}, err
	}
	again, err := s.user(ctx, a.ID)
	if err != nil {
		return Session{}, err
	}
	if again.blocked(time.Now()) {
		return Session{}, ErrUnauthorized
	}
	return Session{Token: token, ExpiresAt: expires, User: again.User}, nil
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID is a random id with the prefix, as shelf makes them.
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + idEncoding.EncodeToString(b[:])
}
