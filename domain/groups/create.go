package groups

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// CreateInput is what a group creation asks for.
type CreateInput struct {
	Name        string
	DisplayName *string // the name when nil
	Description *string
	MaxMembers  *int // nil: no limit
}

// newGroup checks in and returns the group it asks for, pending, with its
// creator's membership recorded as its pending change.
func (g *Service) newGroup(creator string, in CreateInput) (Group, error) {
	name, nameKey, fe1 := NormalizeName(in.Name)
	display := name
	var fe2, fe3, fe4 *domain.FieldError
	if in.DisplayName != nil {
		display, fe2 = domain.NormalizeDisplayName(*in.DisplayName)
	}
	description := ""
	if in.Description != nil {
		description, fe3 = normalizeGroupDescription(*in.Description)
	}
	maxMembers := 0
	if in.MaxMembers != nil {
		maxMembers = *in.MaxMembers
		if maxMembers < 1 || maxMembers > MaxGroupMembers {
			fe4 = &domain.FieldError{Field: "maxMembers", Code: "range", Message: "must be from 1 to 100000"}
		}
	}
	if err := domain.InvalidFields(fe1, fe2, fe3, fe4); err != nil {
		return Group{}, err
	}
	now := g.now()
	return Group{
		ID: domain.NewID(domain.GroupIDPrefix), Name: name, NameKey: nameKey, DisplayName: display, Description: description,
		MaxMembers: maxMembers, MemberCount: 1, ManagerCount: 1, CreatedBy: creator,
		CreatedAt: now, UpdatedAt: now, Status: domain.StatusPending, Version: 1,
		Pending: &MemberChange{UserID: creator, Role: RoleManager},
	}, nil
}

// CreateGroup creates a group with a unique name, its creator its first
// manager. It follows the signup: [claim the name ∥ create the group
// pending, with the creator's membership recorded as its pending change,
// then its change's entry (changes.go)], then commit
// the claim, then activate the group, then finish the creator's
// membership. A creation that dies before activation leaves a
// pending group that expires with the lease: a pending claim expires with
// it, and a committed one is taken over by the next creator, who finds
// its owner's group row gone (see holders). One that dies after activation
// leaves an active group whose creator's membership is finished by the next
// operation on the group; whoever finishes it closes the group if the
// creator's account is being deleted by then (closeDeparted).
func (g *Service) CreateGroup(ctx context.Context, p domain.Principal, in CreateInput) (Group, error) {
	if p.Anonymous() {
		return Group{}, domain.ErrNoSession
	}
	gr, err := g.newGroup(p.UserID, in)
	if err != nil {
		return Group{}, err
	}
	// The change's entry is written once the pending row is: the jobs'
	// worker, finding no group, then knows it expired or was discarded, and
	// can never be activated; an entry before it would be forgotten on a
	// read that proves nothing while the creation stalls
	// (TestACreationSlowPastTheWorkersPassKeepsAnEntry).
	var entry ChangeEntry
	entered := false
	// tag is the attempt whose pending row the activation takes: a row
	// written again by an earlier attempt landing late, after this one's
	// expired, is never activated (its entry may be gone by then, ended by
	// the worker on finding no group), and is discarded or expires
	// (TestALateFirstInsertOfAResentCreationIsNeverActivated).
	var tag string
	err = g.claimer.Create(ctx, domain.Creation{
		ID:      gr.ID,
		Keys:    []domain.Key{{Kind: domain.KindGroupName, Key: gr.NameKey, Field: "name"}},
		Holders: holders{g.groups},
		Create: func(ctx context.Context, lease time.Duration) error {
			t, err := g.groups.Create(ctx, gr, lease)
			if err != nil {
				return err
			}
			tag = t
			e, err := g.beginChange(ctx, gr.ID)
			entry, entered = e, err == nil
			return err
		},
		Activate: func(ctx context.Context) (bool, error) {
			active := gr
			active.Status = domain.StatusActive
			return g.groups.Activate(ctx, active, tag)
		},
		Discard: func(ctx context.Context) error { return g.groups.Discard(ctx, gr.ID) },
		Expired: ErrGroupCreateExpired,
		Step:    func(step string) error { return g.hook("create", step) },
	})
	if errors.Is(err, domain.ErrConflict) { // the name is held by another group, live or creating
		if entered {
			g.endChange(ctx, entry) // this group was never made, or was discarded
		}
		return Group{}, errGroupNameTaken
	}
	if err != nil {
		return Group{}, err
	}
	// Phase 4: write the creator's membership to the member tables.
	gr.Status = domain.StatusActive
	_, departed, err := g.finishChange(ctx, "create", gr)
	if err == nil {
		g.endChange(ctx, entry)
	}
	if departed {
		// The creator's account is being deleted, and the group was closed
		// with it (closeDeparted): its session is over.
		return Group{}, errors.Join(err, domain.ErrNoSession)
	}
	if err != nil {
		return Group{}, err
	}
	gr.Pending = nil
	return gr, nil
}

// holders tells the claimer whether the group behind a committed name
// claim still exists: a creation that died between committing and
// activating leaves no group row once its lease ran out, and can never be
// activated now, so its name is taken over; so is a closed group's (never a
// closing one's: its closing releases the name only once it is closed).
type holders struct{ groups Store }

func (h holders) Holder(ctx context.Context, _ domain.ClaimKind, key, owner string) (exists, holds bool, version int, err error) {
	gr, err := h.groups.GetSerial(ctx, owner)
	if errors.Is(err, domain.ErrNotFound) {
		return false, false, 0, nil
	}
	if err != nil {
		return false, false, 0, err
	}
	if gr.Status == domain.StatusClosed {
		return false, false, 0, nil // closed for good: its name is free
	}
	// A live group (active, pending and still creating, or closing) has
	// the name.
	return true, gr.NameKey == key, gr.Version, nil
}
