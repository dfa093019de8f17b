package faults

import (
	"context"
	"errors"
	"sync"
	"testing"

	"shelf/domain"
	"shelf/domain/library"
)

// deleteFirst is a member store whose first Find lets a delete of the item
// run to its end before it reads: the race in which a change's access
// check read the item live and then finds the caller's member row gone.
type deleteFirst struct {
	library.MemberStore
	once   sync.Once
	delete func() error
	err    error
}

func (d *deleteFirst) Find(ctx context.Context, contentID string, principalIDs []string) ([]library.Member, error) {
	d.once.Do(func() { d.err = d.delete() })
	return d.MemberStore.Find(ctx, contentID, principalIDs)
}

// TestChangeRacingDeleteAnswersNotFound: an owner's update, share, unshare
// or delete whose access check is overtaken by the item's delete answers
// 404 (the item is gone), not 403 (the owner has lost nothing but the
// item).
func TestChangeRacingDeleteAnswersNotFound(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"update", "share", "unshare", "delete"} {
		l := newLibWorld(t)
		stores := l.store.Contents()
		members := &deleteFirst{MemberStore: stores.Members, delete: func() error {
			return l.lib.Delete(context.Background(), as(l.owner), l.item)
		}}
		stores.Members = members
		racer := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: l.store.Now, Background: atOnce},
			l.svc, l.store.Users(), noGroups{}, stores, nopLog{})
		ctx, owner := context.Background(), as(l.owner)
		var err error
		switch change {
		case "update":
			name := "renamed"
			_, err = racer.Update(ctx, owner, l.item, library.Input{Name: &name})
		case "share":
			_, err = racer.Share(ctx, owner, l.item, l.other.ID, library.RoleViewer)
		case "unshare":
			err = racer.Unshare(ctx, owner, l.item, l.friend.ID)
		case "delete":
			err = racer.Delete(ctx, owner, l.item)
		}
		if members.err != nil {
			t.Fatalf("%s: the racing delete failed: %v", change, members.err)
		}
		if !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s racing a delete answered %v, want not found", change, err)
		}
	}
}
