package faults

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"shelf/domain"
	"shelf/domain/library"
	"shelf/tests/memstore"
)

// pageView is one library as one viewer reads it, and the bucket that
// viewer's page is read from (L1).
type pageView struct {
	library string
	viewer  domain.Principal
	bucket  string
}

// pageViews are every library of the world as its owner (a group's as a
// member), an admin, another session and an anonymous caller.
func (l *libWorld) pageViews() []pageView {
	views := []pageView{
		{l.owner.ID, as(l.owner), library.BucketPrivate}, {l.owner.ID, as(l.friend), library.BucketLoggedIn}, {l.owner.ID, domain.Principal{}, library.BucketPublic},
		{l.friend.ID, as(l.friend), library.BucketPrivate}, {l.friend.ID, as(l.other), library.BucketLoggedIn}, {l.friend.ID, domain.Principal{}, library.BucketPublic},
		{l.other.ID, as(l.other), library.BucketPrivate}, {l.other.ID, l.admin, library.BucketPrivate}, {l.other.ID, domain.Principal{}, library.BucketPublic},
	}
	if l.group != "" {
		views = append(views, pageView{l.group, as(l.other), library.BucketPrivate}, pageView{l.group, as(l.friend), library.BucketLoggedIn},
			pageView{l.group, domain.Principal{}, library.BucketPublic})
	}
	return views
}

// itemWord is what a page is checked against: the item's row and whether
// the library's principal is its member as that row records it.
type itemWord struct {
	c        library.Content
	found    bool
	member   bool
	removing bool
}

func wordOf(snap memstore.ContentSnapshot, id, principal string) itemWord {
	for _, c := range snap.Items {
		if c.ID != id {
			continue
		}
		w := itemWord{c: c, found: true, member: memberRole(snap, id, principal) != ""}
		if c.Pending != nil && c.Pending.PrincipalID == principal {
			w.member, w.removing = c.Pending.Role != "", c.Pending.Role == ""
		}
		return w
	}
	return itemWord{}
}

func sameWord(a, b itemWord) bool {
	return a.found == b.found && a.member == b.member && a.removing == b.removing && a.c.Name == b.c.Name &&
		a.c.Visibility == b.c.Visibility && a.c.LastModified.Equal(b.c.LastModified) && a.c.Deleted == b.c.Deleted
}

// checkPagesNow reads the first page of every library as every viewer
// and checks each item listed against the item's own row, read before
// and after the page (an item that changed meanwhile, a parallel branch
// of the action landing, is left alone): a page never shows an item
// that is deleted, one its viewer's bucket may not see, what the item no
// longer says (name, visibility, last change), an item in the library of
// a principal that is no member of it (or whose removal the item
// records), nor an item twice (L1, L2, L3). It holds at every moment,
// not only once the changes are done.
func (l *libWorld) checkPagesNow(t *testing.T, name, when string) {
	ctx := context.Background()
	for _, v := range l.pageViews() {
		before := l.store.ContentSnapshot()
		page, err := l.lib.Library(ctx, v.viewer, v.library, library.NewestFirst, "", 100)
		after := l.store.ContentSnapshot()
		if err != nil {
			continue // a group closed, or the store failing: nothing shown
		}
		seen := map[string]bool{}
		for _, e := range page.Items {
			if seen[e.ContentID] {
				t.Errorf("%s: %s: %s's library as %q lists %s twice", name, when, v.library, v.viewer.UserID, e.ContentID)
			}
			seen[e.ContentID] = true
			w := wordOf(before, e.ContentID, v.library)
			if !sameWord(w, wordOf(after, e.ContentID, v.library)) {
				continue
			}
			var wrong string
			switch {
			case !w.found:
				wrong = "an item that does not exist"
			case w.c.Deleted:
				wrong = "a deleted item"
			case !slices.Contains(library.BucketsFor(w.c.Visibility), v.bucket):
				wrong = fmt.Sprintf("a %s item to a viewer of the %s bucket", w.c.Visibility, v.bucket)
			case e.Name != w.c.Name || e.Visibility != w.c.Visibility || !e.LastModified.Equal(w.c.LastModified):
				wrong = fmt.Sprintf("%q/%s/%s where the item is %q/%s/%s", e.Name, e.Visibility, e.LastModified, w.c.Name, w.c.Visibility, w.c.LastModified)
			case w.removing:
				wrong = "an item whose removal from this library is recorded"
			case !w.member:
				wrong = "an item its principal is no member of"
			}
			if wrong != "" {
				t.Errorf("%s: %s: %s's library as %q shows %s (%s)", name, when, v.library, v.viewer.UserID, e.ContentID, wrong)
			}
		}
	}
}

// TestExploreContentPagesAtEveryStep is TestExploreContent's schedules of
// a slow call at every call of every action, each competitor after it,
// where inside the slow call (the action stopped between two of its
// calls) every library's page is read by every viewer and checked
// (checkPagesNow), then the outbox worker runs, and the pages are checked
// again. The explorers check pages only once everything has landed; a
// page is read at any moment.
func TestExploreContentPagesAtEveryStep(t *testing.T) {
	t.Parallel()
	worlds := map[string]func(t *testing.T) *libWorld{
		"lean":     newLibWorld,
		"not-lean": func(t *testing.T) *libWorld { return newLibWorldOf(t, 1000, 1) },
		"pool":     func(t *testing.T) *libWorld { return newLibWorldOf(t, 1, 0) },
		"crossing": func(t *testing.T) *libWorld { return newLibWorldOf(t, 1000, 3) },
	}
	total := 0
	for wname, fresh := range worlds {
		for _, op := range libOperations {
			probe := fresh(t)
			if op.setup != nil {
				if err := op.setup(probe); err != nil {
					t.Fatal(err)
				}
			}
			probe.hold()
			calls := callsOf(t, probe.store, op.name, func() error {
				err := op.run(probe)
				probe.flush()
				return err
			})
			total += everyScheduleOf(t, wname+"/"+op.name+"/pages", calls, []memstore.Fault{memstore.Slow}, competitorNames(competitors), func(name string, k int, fault memstore.Fault, c int) {
				exploreContent(t, name, fresh(t), op, k, fault, competitors[c], pagesChecked)
			})
		}
	}
	t.Logf("%d schedules in all", total)
}
