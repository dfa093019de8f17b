package faults

import (
	"context"
	"testing"

	"shelf/domain/library"
	"shelf/tests/memstore"
)

// slowFirst makes the first call named stmt Slow, running meanwhile in
// it; every other call runs as usual.
func slowFirst(st *memstore.Store, stmt string, meanwhile func()) {
	fired := false
	st.FaultAt = func(_ int, name string) memstore.Fault {
		if name == stmt && !fired {
			fired = true
			return memstore.Slow
		}
		return memstore.None
	}
	st.Meanwhile = meanwhile
}

// TestAManagerRemovedMidShareCannotShareHimselfBack: the friend manages
// the item and shares it with himself as a manager (nothing to do, as it
// stands). His access check reads his member row slowly; meanwhile the
// owner takes him off the item, and that unshare answers 204. The
// friend's share then decides on the item as it now stands, on a manager
// check of the item as it stood before: it must not make him a member
// (a manager) again after his removal answered. A change that grants
// something re-checks the state it relied on ("check again at the end").
func TestAManagerRemovedMidShareCannotShareHimselfBack(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	if err := l.share(l.friend, library.RoleManager); err != nil {
		t.Fatal(err)
	}
	var unshareErr error
	slowFirst(l.store, "content_members.find", func() {
		unshareErr = l.unshare(l.owner, l.friend)
	})
	_, shareErr := l.lib.Share(ctx, as(l.friend), l.item, l.friend.ID, library.RoleManager)
	l.store.FaultAt, l.store.Meanwhile = nil, nil
	if unshareErr != nil {
		t.Fatalf("the owner's unshare of the friend answered %v", unshareErr)
	}
	t.Logf("the friend's share answered %v", shareErr)
	if role := memberRole(l.store.ContentSnapshot(), l.item, l.friend.ID); role != "" {
		t.Errorf("after the owner's unshare of him answered, the friend is the item's %s again (his share answered %v)", role, shareErr)
	}
	name := "mine now"
	if _, err := l.lib.Update(ctx, as(l.friend), l.item, library.Input{Name: &name}); err == nil {
		t.Errorf("after the owner's unshare of him answered, the friend still changes the item")
	}
}

// TestAManagerRemovedMidUpdateCannotUndoTheOwnersLaterChange: the friend
// manages the public item and renames it, making it public again. His
// access check reads his member row slowly; meanwhile the owner takes him
// off the item (204), then makes it private (200). The friend's update,
// decided on a manager check of the item as it stood before, must not be
// recorded on top: whenever it took effect, he no longer managed the item
// or the owner's later change would stand.
func TestAManagerRemovedMidUpdateCannotUndoTheOwnersLaterChange(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	if err := l.share(l.friend, library.RoleManager); err != nil {
		t.Fatal(err)
	}
	var ownerErr error
	slowFirst(l.store, "content_members.find", func() {
		if ownerErr = l.unshare(l.owner, l.friend); ownerErr == nil {
			ownerErr = l.update("secret", string(library.VisibilityPrivate))
		}
	})
	name, public := "leaked", string(library.VisibilityPublic)
	_, updateErr := l.lib.Update(ctx, as(l.friend), l.item, library.Input{Name: &name, Visibility: &public})
	l.store.FaultAt, l.store.Meanwhile = nil, nil
	if ownerErr != nil {
		t.Fatalf("the owner's unshare and update answered %v", ownerErr)
	}
	if it := itemOf(l.store.ContentSnapshot(), l.item); it.Visibility != library.VisibilityPrivate || it.Name != "secret" {
		t.Errorf("after the owner removed the friend and made the item private, the friend's update in flight made it %s %q (it answered %v)", it.Visibility, it.Name, updateErr)
	}
}
