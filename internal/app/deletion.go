package app

import (
	"context"
	"errors"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
)

// NewDeletionDeps wires account deletion to the groups and content
// services, as the app does (the fault explorer in tests/faults wires its
// in-memory stores through it too).
func NewDeletionDeps(index accounts.DeletionStore, grp *groups.Service, lib *library.Service,
	entries library.EntryStore, suspensions accounts.SuspensionRecords) accounts.DeletionDeps {
	return accounts.DeletionDeps{Index: index, Groups: deletionGroups{grp},
		Library: deletionLibrary{content: lib, entries: entries}, Suspensions: suspensions}
}

// deletionGroups is what deleting an account needs of groups, through the
// groups' own operations (accounts.Groups).
type deletionGroups struct{ groups *groups.Service }

var _ accounts.Groups = deletionGroups{}

// Memberships reads each of the user's groups and the user's role there.
// A change found pending in a group is finished first (as a reader of its
// members does), so the counts are settled; Pending says one was found
// again.
func (d deletionGroups) Memberships(ctx context.Context, userID string) ([]accounts.GroupMembership, error) {
	ids, err := d.groups.GroupIDsOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	self := domain.Principal{UserID: userID}
	var out []accounts.GroupMembership
	for _, id := range ids {
		gr, err := d.groups.GetGroup(ctx, id)
		if err == nil && gr.Pending != nil {
			if _, err = d.groups.ListMembers(ctx, self, id, "", 1); err == nil || errors.Is(err, domain.ErrForbidden) {
				gr, err = d.groups.GetGroup(ctx, id)
			}
		}
		if errors.Is(err, domain.ErrNotFound) {
			// Gone; a closing of it still under way (the deletion's own,
			// interrupted) is finished, so no member row of it stays.
			if err := d.groups.FinishClosing(ctx, id); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		role, err := d.groups.MemberRole(ctx, id, userID)
		if errors.Is(err, domain.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, accounts.GroupMembership{GroupID: id, Manager: role == groups.RoleManager,
			Members: gr.MemberCount, Managers: gr.ManagerCount, Version: gr.Version, Pending: gr.Pending != nil})
	}
	return out, nil
}

// Leave removes the user from the group as the user would.
func (d deletionGroups) Leave(ctx context.Context, groupID, userID string) error {
	return d.groups.RemoveMember(ctx, domain.Principal{UserID: userID}, groupID, userID)
}

// OtherMembers reads the first members of the group, the user left out.
func (d deletionGroups) OtherMembers(ctx context.Context, groupID, userID string, limit int) ([]string, error) {
	page, err := d.groups.ListMembers(ctx, domain.Principal{UserID: userID}, groupID, "", limit)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range page.Items {
		if m.UserID != userID {
			out = append(out, m.UserID)
		}
	}
	return out, nil
}

// CloseAlone closes the group if the user is its only member.
func (d deletionGroups) CloseAlone(ctx context.Context, groupID, userID string) error {
	return d.groups.CloseAlone(ctx, groupID, userID)
}

// Promote makes member a manager, as the manager by.
func (d deletionGroups) Promote(ctx context.Context, groupID, by, member string) error {
	_, _, err := d.groups.SetMember(ctx, domain.Principal{UserID: by}, groupID, member, groups.RoleManager)
	return err
}

// deletionLibrary is what deleting an account needs of content
// (accounts.Library): its index, read directly, and content's own
// changes.
type deletionLibrary struct {
	content *library.Service
	entries library.EntryStore
}

var _ accounts.Library = deletionLibrary{}

// Items lists the user's library index.
func (d deletionLibrary) Items(ctx context.Context, userID, after string, limit int) ([]accounts.LibraryItem, error) {
	entries, err := d.entries.IndexPage(ctx, userID, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]accounts.LibraryItem, len(entries))
	for i, e := range entries {
		out[i] = accounts.LibraryItem{ContentID: e.ContentID, Role: e.Role}
	}
	return out, nil
}

// Creator reads who made the item.
func (d deletionLibrary) Creator(ctx context.Context, p domain.Principal, contentID string) (string, error) {
	c, err := d.content.Get(ctx, p, contentID)
	return c.CreatedBy, err
}

// Delete deletes the item as p.
func (d deletionLibrary) Delete(ctx context.Context, p domain.Principal, contentID string) error {
	return d.content.Delete(ctx, p, contentID)
}

// Unshare takes principalID off the item as p.
func (d deletionLibrary) Unshare(ctx context.Context, p domain.Principal, contentID, principalID string) error {
	return d.content.Unshare(ctx, p, contentID, principalID)
}

// Prune empties what is left of the library.
func (d deletionLibrary) Prune(ctx context.Context, principalID string) error {
	return d.content.Purge(ctx, principalID)
}

// Closing a group takes what it needs of content from the content service
// itself: the group's library index, content's own unshare and purge.
var _ groups.Shares = (*library.Service)(nil)
