package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"shelf/domain"
	"shelf/domain/library"
)

// versioned is one row of a table written USING TIMESTAMP: a write lands
// only if its timestamp is newer than the row's, a delete also on a tie
// (as in Cassandra, where a tombstone wins a tie). Two writes of a live
// row at one timestamp keep, column by column, the greater value, as the
// node reconciles cells of one timestamp (see tie).
type versioned[T any] struct {
	v       T
	ts      int64
	deleted bool
}

func putAt[T any](table map[string]versioned[T], key string, v T, ts int64) {
	c, ok := table[key]
	switch {
	case !ok || ts > c.ts:
		table[key] = versioned[T]{v: v, ts: ts}
	case ts == c.ts && !c.deleted:
		table[key] = versioned[T]{v: tie(c.v, v), ts: ts}
	}
}

// tie is the row two writes of one timestamp leave: for the library's
// tables (its index and rows), the greater value of each column, as
// Cassandra keeps of two cells of one timestamp (the greater bytes: true
// over false, the later time, text by its bytes); for the other tables
// the row that landed first (their writes of one timestamp say the same).
func tie[T any](a, b T) T {
	x, ok := any(a).(library.Entry)
	if !ok {
		return a
	}
	y := any(b).(library.Entry)
	x.Role, x.Name, x.Visibility = max(x.Role, y.Role), max(x.Name, y.Name), max(x.Visibility, y.Visibility)
	if y.LastModified.After(x.LastModified) {
		x.LastModified = y.LastModified
	}
	x.Version, x.Lean = max(x.Version, y.Version), x.Lean || y.Lean
	return any(x).(T)
}

func deleteAt[T any](table map[string]versioned[T], key string, ts int64) {
	if c, ok := table[key]; !ok || ts >= c.ts {
		table[key] = versioned[T]{v: c.v, ts: ts, deleted: true}
	}
}

// partition lists one partition's live rows in clustering order (under the
// lock): the rows of table keyed partition|clustering(row), as a read of
// a Cassandra partition returns them.
func partition[T any](table map[string]versioned[T], partition string, clustering func(T) string) []T {
	var out []T
	for k, c := range table {
		if !c.deleted && k == partition+"|"+clustering(c.v) {
			out = append(out, c.v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return clustering(out[i]) < clustering(out[j]) })
	return out
}

// pageAfter is a page of rows (in clustering order): the first limit whose
// clustering key is after the cursor.
func pageAfter[T any](rows []T, after string, limit int, clustering func(T) string) []T {
	var out []T
	for _, r := range rows {
		if clustering(r) > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out
}

// contentTables are content's tables: the items (compare-and-set rows),
// content_members, library_index, library_by_principal and the outbox
// marks.
type contentTables struct {
	items   map[string]library.Content
	members map[string]versioned[library.Member] // content|principal
	index   map[string]versioned[library.Entry]  // principal|content
	rows    map[string]versioned[library.Entry]  // principal|bucket|lastModified|content
	marks   map[string]versioned[library.OutboxEntry]
	marked  int
	// markedAt is each marker's time, taken when Mark was called (the
	// repository's time UUID), which its write and Done's carry.
	markedAt map[string]time.Time
	// outboxStart is where Pending's windows begin (the repository's
	// queue_progress row, written by the migration at its time).
	outboxStart time.Time
}

func newContentTables(start time.Time) contentTables {
	return contentTables{items: map[string]library.Content{}, members: map[string]versioned[library.Member]{},
		index: map[string]versioned[library.Entry]{}, rows: map[string]versioned[library.Entry]{},
		marks: map[string]versioned[library.OutboxEntry]{}, markedAt: map[string]time.Time{},
		outboxStart: start.Truncate(OutboxWidth)}
}

// OutboxWidth and OutboxHorizon are the repository's outbox layout: a
// window of marks a minute wide, a start that passes a window only once
// it ended two minutes ago (and read empty), and reads at most two
// minutes ahead of the reader's clock.
const (
	OutboxWidth   = time.Minute
	OutboxHorizon = 2 * time.Minute
)

func rowKey(principalID, bucket string, lastModified time.Time, contentID string) string {
	return principalID + "|" + bucket + "|" + strconv.FormatInt(lastModified.UnixMilli(), 10) + "|" + contentID
}

// cloneContent copies an item (its pending change is a pointer).
func cloneContent(c library.Content) library.Content {
	if c.Pending != nil {
		p := *c.Pending
		c.Pending = &p
	}
	return c
}

// Contents is the store as content's stores (library.Stores).
func (s *Store) Contents() library.Stores {
	return library.Stores{Content: items{s}, Members: members{s}, Library: entries{s}, Outbox: outbox{s: s}}
}

type items struct{ s *Store }

func (t items) Create(_ context.Context, c library.Content) (bool, error) {
	return t.s.call("content.create", true, func() (bool, error) {
		if _, ok := t.s.content.items[c.ID]; ok {
			return false, nil
		}
		t.s.content.items[c.ID] = cloneContent(c)
		return true, nil
	})
}

func (t items) Get(_ context.Context, id string) (library.Content, error) {
	var out library.Content
	found, err := t.s.call("content.get", false, func() (bool, error) {
		c, ok := t.s.content.items[id]
		out = cloneContent(c)
		return ok, nil
	})
	if err == nil && !found {
		return library.Content{}, domain.ErrNotFound
	}
	return out, err
}

func (t items) GetSerial(ctx context.Context, id string) (library.Content, error) {
	return t.Get(ctx, id)
}

func (t items) Update(_ context.Context, c library.Content) (bool, error) {
	return t.s.call("content.update", true, func() (bool, error) {
		if cur, ok := t.s.content.items[c.ID]; !ok || cur.Version != c.Version-1 {
			return false, nil
		}
		t.s.content.items[c.ID] = cloneContent(c)
		return true, nil
	})
}

func (t items) TakeBack(_ context.Context, c library.Content, principalID, askedBy string) (bool, error) {
	return t.s.call("content.update", true, func() (bool, error) {
		cur, ok := t.s.content.items[c.ID]
		if !ok || cur.Version != c.Version-1 || cur.Pending == nil || cur.Pending.PrincipalID != principalID ||
			(askedBy != "" && cur.Pending.AskedBy != askedBy) {
			return false, nil
		}
		t.s.content.items[c.ID] = cloneContent(c)
		return true, nil
	})
}

func (t items) Vouch(_ context.Context, c library.Content) (bool, error) {
	return t.s.call("content.vouch", true, func() (bool, error) {
		cur, ok := t.s.content.items[c.ID]
		if !ok || cur.Version != c.Version || cur.Pending == nil || c.Pending == nil ||
			cur.Pending.PrincipalID != c.Pending.PrincipalID || cur.Pending.AskedBy == "" || cur.Pending.AskedBy != c.Pending.AskedBy {
			return false, nil
		}
		cur = cloneContent(cur)
		cur.Pending.AskedBy, cur.Pending.Through, cur.Pending.PriorRole = "", "", ""
		t.s.content.items[c.ID] = cur
		return true, nil
	})
}

func (t items) ClearPending(_ context.Context, c library.Content) (bool, error) {
	return t.s.call("content.clear", true, func() (bool, error) {
		cur, ok := t.s.content.items[c.ID]
		if !ok || cur.Version != c.Version {
			return false, nil
		}
		cur.Pending, cur.Lean = nil, c.Lean
		t.s.content.items[c.ID] = cur
		return true, nil
	})
}

// States reads the items in one call, as the repository's IN read does.
func (t items) States(_ context.Context, ids []string) (map[string]library.ItemState, error) {
	out := map[string]library.ItemState{}
	_, err := t.s.call("content.states", false, func() (bool, error) {
		for _, id := range ids {
			if c, ok := t.s.content.items[id]; ok {
				st := library.ItemState{ID: c.ID, Name: c.Name, Visibility: c.Visibility, LastModified: c.LastModified, Deleted: c.Deleted}
				if c.Pending != nil && c.Pending.Role == "" {
					st.Removing = c.Pending.PrincipalID // an unshare recorded, not finished
				}
				out[id] = st
			}
		}
		return true, nil
	})
	return out, err
}

type members struct{ s *Store }

func (m members) Put(_ context.Context, contentID string, mb library.Member, version int) error {
	_, err := m.s.call("content_members.put", true, func() (bool, error) {
		putAt(m.s.content.members, contentID+"|"+mb.PrincipalID, mb, int64(version))
		return true, nil
	})
	return err
}

func (m members) Delete(_ context.Context, contentID, principalID string, version int) error {
	_, err := m.s.call("content_members.delete", true, func() (bool, error) {
		deleteAt(m.s.content.members, contentID+"|"+principalID, int64(version))
		return true, nil
	})
	return err
}

// all lists an item's live members in principal order (under the lock).
func (m members) all(contentID string) []library.Member {
	return partition(m.s.content.members, contentID, memberPrincipal)
}

func memberPrincipal(mb library.Member) string { return mb.PrincipalID }

func (m members) Find(_ context.Context, contentID string, principalIDs []string) ([]library.Member, error) {
	var out []library.Member
	_, err := m.s.call("content_members.find", false, func() (bool, error) {
		m.s.memberRows += len(principalIDs)
		for _, p := range principalIDs {
			if c, ok := m.s.content.members[contentID+"|"+p]; ok && !c.deleted {
				out = append(out, c.v)
			}
		}
		return true, nil
	})
	return out, err
}

func (m members) Page(_ context.Context, contentID, after string, limit int) ([]library.Member, error) {
	var out []library.Member
	_, err := m.s.call("content_members.page", false, func() (bool, error) {
		out = pageAfter(m.all(contentID), after, limit, memberPrincipal)
		m.s.memberRows += len(out)
		return true, nil
	})
	return out, err
}

// Groups is the slice of the item's members whose ids are group ids.
func (m members) Groups(_ context.Context, contentID string) ([]library.Member, error) {
	var out []library.Member
	_, err := m.s.call("content_members.groups", false, func() (bool, error) {
		for _, mb := range m.all(contentID) {
			if strings.HasPrefix(mb.PrincipalID, domain.GroupIDPrefix) {
				out = append(out, mb)
			}
		}
		m.s.memberRows += len(out)
		return true, nil
	})
	return out, err
}

type entries struct{ s *Store }

func (l entries) write(name string, apply func()) error {
	_, err := l.s.call(name, true, func() (bool, error) { apply(); return true, nil })
	return err
}

// Apply writes the index entry (stopping there if it fails), then one
// batch per bucket (each its own call), trying them all whatever fails,
// as the repository sends the buckets' batches at once. A row keeps the
// entry's Role, which
// the repository's library_by_principal has no column for (its Slice
// answers none).
func (l entries) Apply(_ context.Context, e library.Entry, prev *library.Entry) error {
	t, ts := &l.s.content, int64(e.Version)
	if err := l.write("library_index.put", func() { putAt(t.index, e.PrincipalID+"|"+e.ContentID, e, ts) }); err != nil {
		return err
	}
	want, had := map[string]bool{}, map[string]bool{}
	for _, b := range library.BucketsFor(e.Visibility) {
		want[b] = true
	}
	if prev != nil {
		for _, b := range library.BucketsFor(prev.Visibility) {
			had[b] = true
		}
	}
	var errs []error
	for _, b := range library.Buckets() {
		if !want[b] && !had[b] {
			continue
		}
		errs = append(errs, l.write("library.batch", func() {
			if had[b] && !(want[b] && prev.LastModified.Equal(e.LastModified)) {
				deleteAt(t.rows, rowKey(e.PrincipalID, b, prev.LastModified, e.ContentID), ts)
			}
			if want[b] {
				putAt(t.rows, rowKey(e.PrincipalID, b, e.LastModified, e.ContentID), e, ts)
			}
		}))
	}
	return errors.Join(errs...)
}

// Remove deletes the index entry (stopping there if it fails), then
// prev's rows, trying them all whatever fails, as the repository sends
// them at once.
func (l entries) Remove(_ context.Context, principalID, contentID string, prev *library.Entry, version int) error {
	t, ts := &l.s.content, int64(version)
	if err := l.write("library_index.delete", func() { deleteAt(t.index, principalID+"|"+contentID, ts) }); err != nil {
		return err
	}
	if prev == nil {
		return nil
	}
	var errs []error
	for _, b := range library.BucketsFor(prev.Visibility) {
		errs = append(errs, l.write("library.delete", func() { deleteAt(t.rows, rowKey(principalID, b, prev.LastModified, contentID), ts) }))
	}
	return errors.Join(errs...)
}

func (l entries) Index(_ context.Context, principalID string, contentIDs []string) (map[string]library.Entry, error) {
	out := map[string]library.Entry{}
	_, err := l.s.call("library_index.get", false, func() (bool, error) {
		for _, id := range contentIDs {
			if c, ok := l.s.content.index[principalID+"|"+id]; ok && !c.deleted {
				out[id] = c.v
			}
		}
		return true, nil
	})
	return out, err
}

// indexOf lists a principal's live index entries in content order (under
// the lock).
func (l entries) indexOf(principalID string) []library.Entry {
	return partition(l.s.content.index, principalID, entryContent)
}

func entryContent(e library.Entry) string { return e.ContentID }

func (l entries) CountIndex(_ context.Context, principalID string) (int, error) {
	n := 0
	_, err := l.s.call("library_index.count", false, func() (bool, error) {
		n = len(l.indexOf(principalID))
		return true, nil
	})
	return n, err
}

func (l entries) IndexPage(_ context.Context, principalID, after string, limit int) ([]library.Entry, error) {
	var out []library.Entry
	_, err := l.s.call("library_index.page", false, func() (bool, error) {
		out = pageAfter(l.indexOf(principalID), after, limit, entryContent)
		return true, nil
	})
	return out, err
}

func (l entries) Slice(_ context.Context, principalID, bucket string, order library.Order, after *library.Cursor, limit int) ([]library.Entry, error) {
	// before orders the slice: newest first, or oldest first reversed.
	before := func(a, b library.Entry) bool { return newer(a, b.LastModified, b.ContentID) }
	if order == library.OldestFirst {
		before = func(a, b library.Entry) bool { return newer(b, a.LastModified, a.ContentID) }
	}
	var out []library.Entry
	_, err := l.s.call("library.slice", false, func() (bool, error) {
		var rows []library.Entry
		for k, c := range l.s.content.rows {
			if !c.deleted && k == rowKey(principalID, bucket, c.v.LastModified, c.v.ContentID) {
				rows = append(rows, c.v)
			}
		}
		sort.Slice(rows, func(i, j int) bool { return before(rows[i], rows[j]) })
		for _, r := range rows {
			if (after == nil || before(*after2entry(after), r)) && len(out) < limit {
				out = append(out, r)
			}
		}
		return true, nil
	})
	return out, err
}

// newer orders a library newest first: e before (lastModified, contentID).
func newer(e library.Entry, lastModified time.Time, contentID string) bool {
	if !e.LastModified.Equal(lastModified) {
		return e.LastModified.After(lastModified)
	}
	return e.ContentID > contentID
}

func after2entry(c *library.Cursor) *library.Entry {
	return &library.Entry{LastModified: c.LastModified, ContentID: c.ContentID}
}

func (l entries) DeleteRow(_ context.Context, bucket string, e library.Entry) error {
	return l.write("library.delete", func() {
		deleteAt(l.s.content.rows, rowKey(e.PrincipalID, bucket, e.LastModified, e.ContentID), int64(e.Version))
	})
}

// outbox is the store as the outbox, on the store's clock moved by skew
// (SkewedOutbox).
type outbox struct {
	s    *Store
	skew time.Duration
}

// SkewedOutbox is the outbox as a process whose clock is d ahead of the
// store's (behind, for d < 0) sees it: it makes its marks and reads from
// that clock, as the repository's Outbox.WithClock.
func (s *Store) SkewedOutbox(d time.Duration) library.Outbox { return outbox{s: s, skew: d} }

// Mark adds a mark of its own, at the store's clock when it is called
// (however late its write lands, as the repository's time UUID); Done
// deletes it at that timestamp, so a mark landing after its Done stays
// deleted.
func (o outbox) Mark(_ context.Context, contentID string) (library.OutboxEntry, error) {
	s := o.s
	s.mu.Lock()
	s.content.marked++
	marker, at := fmt.Sprintf("%012d", s.content.marked), s.now.Add(o.skew)
	s.content.markedAt[marker] = at
	s.mu.Unlock()
	e := library.OutboxEntry{ContentID: contentID, Marker: marker, MarkedAt: at}
	_, err := s.call("content_marks.mark", true, func() (bool, error) {
		putAt(s.content.marks, marker, e, at.UnixMicro())
		return true, nil
	})
	if err != nil {
		return library.OutboxEntry{}, err
	}
	return e, nil
}

func (o outbox) Done(_ context.Context, _ string, marker string) error {
	_, err := o.s.call("content_marks.done", true, func() (bool, error) {
		// At the mark's own time, landed yet or not.
		deleteAt(o.s.content.marks, marker, o.s.content.markedAt[marker].UnixMicro())
		return true, nil
	})
	return err
}

// Pending lists the marks made before the end of before's millisecond
// (before at most OutboxHorizon ahead of the clock), window by window,
// of the windows that begin before before, from the start, as the
// repository's does, and moves the start past the windows it read empty
// that ended OutboxHorizon ago: a mark whose write lands in a window the
// start passed is never listed.
func (o outbox) Pending(_ context.Context, before time.Time, limit int) ([]library.OutboxEntry, error) {
	s := o.s
	var out []library.OutboxEntry
	_, err := s.call("content_marks.pending", false, func() (bool, error) {
		out = nil
		now := s.now.Add(o.skew)
		if latest := now.Add(OutboxHorizon); before.After(latest) {
			before = latest
		}
		start := s.content.outboxStart
		// The start passes windows by the reader's clock or the node's
		// (the store's), whichever is behind, as the repository's.
		behind := now
		if s.now.Before(behind) {
			behind = s.now
		}
		next, closed, advancing := start, behind.Add(-OutboxHorizon), true
		// A window's read takes every mark up to maxTimeuuid(before): the
		// whole of before's millisecond.
		until := before.Truncate(time.Millisecond).Add(time.Millisecond)
		for b := start.Truncate(OutboxWidth); b.Before(before) && len(out) < limit; b = b.Add(OutboxWidth) {
			var rows []library.OutboxEntry
			for _, c := range s.content.marks {
				if !c.deleted && c.v.MarkedAt.Truncate(OutboxWidth).Equal(b) && c.v.MarkedAt.Before(until) {
					rows = append(rows, c.v)
				}
			}
			sort.Slice(rows, func(i, j int) bool { return rows[i].Marker < rows[j].Marker })
			rows = rows[:min(len(rows), limit-len(out))]
			out = append(out, rows...)
			end := b.Add(OutboxWidth)
			if advancing && len(rows) == 0 && !end.After(closed) && !end.After(before) {
				next = end
			} else {
				advancing = false
			}
		}
		if next.After(start) {
			s.content.outboxStart = next
		}
		return true, nil
	})
	return out, err
}

// ContentSnapshot is every item, each item's members, and each
// principal's index entries and visible rows, for invariant checks.
type ContentSnapshot struct {
	Items   []library.Content
	Members map[string][]library.Member // by content id
	Index   map[string][]library.Entry  // by principal id
	// Rows are the live library rows, by principal id.
	Rows  map[string][]library.Entry
	Marks int
}

// watchLean records, when WatchLean is set, the lean rows wrong after
// the named call (s.mu held).
func (s *Store) watchLean(after string) {
	if !s.WatchLean {
		return
	}
	for _, w := range s.wrongLeanRows() {
		s.LeanWrong = append(s.LeanWrong, after+": "+w)
	}
}

// wrongLeanRows lists the live lean library rows their item does not
// vouch for: a page shows them without reading the item, so each must
// say what the item says now (name, visibility, last change, not
// deleted), sit in a bucket whose viewers may see it, and belong to a
// member (or to the principal of a share the item's row records). The
// changes keep it so by removing the rows they would make wrong before
// their compare-and-set (s.mu held). No row of either kind may sit at
// its item's provisional place (library.Content.Placing): an oldest-first
// run could list it a second time there.
func (s *Store) wrongLeanRows() []string {
	var wrong []string
	for key, r := range s.content.rows {
		c, ok := s.content.items[r.v.ContentID]
		if ok && !r.deleted && c.Placing && c.LastModified.Equal(r.v.LastModified) {
			wrong = append(wrong, fmt.Sprintf("%s: a row at its item's provisional place", key))
		}
		if r.deleted || !r.v.Lean {
			continue
		}
		e := r.v
		_, bucket, _ := strings.Cut(key, "|") // principal|bucket|...
		bucket, _, _ = strings.Cut(bucket, "|")
		member := ok && c.Pending != nil && c.Pending.PrincipalID == e.PrincipalID && c.Pending.Role != ""
		if !member {
			m, found := s.content.members[e.ContentID+"|"+e.PrincipalID]
			member = found && !m.deleted
		}
		switch {
		case !ok:
			wrong = append(wrong, fmt.Sprintf("%s: a lean row of an item that does not exist", key))
		case c.Deleted:
			wrong = append(wrong, fmt.Sprintf("%s: a lean row of a deleted item", key))
		case !slices.Contains(library.BucketsFor(c.Visibility), bucket):
			wrong = append(wrong, fmt.Sprintf("%s: a lean row in a bucket a %s item is not in", key, c.Visibility))
		case c.Name != e.Name || c.Visibility != e.Visibility || !c.LastModified.Equal(e.LastModified):
			wrong = append(wrong, fmt.Sprintf("%s: a lean row shows %q/%s/%s, the item is %q/%s/%s", key,
				e.Name, e.Visibility, e.LastModified.Format(time.RFC3339Nano), c.Name, c.Visibility, c.LastModified.Format(time.RFC3339Nano)))
		case !member:
			wrong = append(wrong, fmt.Sprintf("%s: a lean row in the library of a principal that is not a member", key))
		}
	}
	slices.Sort(wrong)
	return wrong
}

// ContentSnapshot reads the content tables.
func (s *Store) ContentSnapshot() ContentSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := ContentSnapshot{Members: map[string][]library.Member{}, Index: map[string][]library.Entry{},
		Rows: map[string][]library.Entry{}}
	for _, c := range s.content.items {
		snap.Items = append(snap.Items, cloneContent(c))
		snap.Members[c.ID] = members{s}.all(c.ID)
	}
	sort.Slice(snap.Items, func(i, j int) bool { return snap.Items[i].ID < snap.Items[j].ID })
	for _, c := range s.content.index {
		if !c.deleted {
			snap.Index[c.v.PrincipalID] = append(snap.Index[c.v.PrincipalID], c.v)
		}
	}
	for _, c := range s.content.rows {
		if !c.deleted {
			snap.Rows[c.v.PrincipalID] = append(snap.Rows[c.v.PrincipalID], c.v)
		}
	}
	for _, c := range s.content.marks {
		if !c.deleted {
			snap.Marks++
		}
	}
	return snap
}
