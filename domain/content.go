package domain

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Visibility says who may see an item (DESIGN.md, L1).
type Visibility string

// The visibilities.
const (
	VisibilityPublic   Visibility = "public"
	VisibilityLoggedIn Visibility = "loggedin"
	VisibilityPrivate  Visibility = "private"
)

// Library buckets: a viewer reads exactly one of a library's three.
const (
	BucketPrivate  = "private"
	BucketLoggedIn = "loggedin"
	BucketPublic   = "public"
)

// BucketsFor lists the buckets an item of visibility v is in: every bucket
// whose viewers may see v.
func BucketsFor(v Visibility) []string {
	switch v {
	case VisibilityPublic:
		return []string{BucketPrivate, BucketLoggedIn, BucketPublic}
	case VisibilityLoggedIn:
		return []string{BucketPrivate, BucketLoggedIn}
	default:
		return []string{BucketPrivate}
	}
}

// Content roles.
const (
	RoleViewer  = "viewer"
	RoleManager = "manager"
)

// Content is a shared item.
type Content struct {
	ID           string
	Name         string
	Description  string
	Visibility   Visibility
	Link         string
	CreatedBy    string
	CreatedAt    time.Time
	LastModified time.Time
	Deleted      bool
	// Members and Managers count the item's members, kept by the same
	// compare-and-set as Version.
	Members  int
	Managers int
	// Version counts changes (update, share, unshare, delete); it is the
	// write timestamp of everything the change writes elsewhere.
	Version int
}

// ContentMember is a principal an item is shared with.
type ContentMember struct {
	PrincipalID string
	Role        string
}

// ContentStore keeps the content rows (LWT-managed).
type ContentStore interface {
	Create(ctx context.Context, c Content) error
	Get(ctx context.Context, id string) (Content, error)
	GetSerial(ctx context.Context, id string) (Content, error)
	// Update writes c if the stored version is c.Version-1.
	Update(ctx context.Context, c Content) (bool, error)
}

// ContentMemberStore keeps who each item is shared with, written at the item's
// version.
type ContentMemberStore interface {
	Put(ctx context.Context, contentID string, m ContentMember, version int) error
	Delete(ctx context.Context, contentID, principalID string, version int) error
	// Find returns the members among principalIDs.
	Find(ctx context.Context, contentID string, principalIDs []string) ([]ContentMember, error)
	// Page lists members after principal id `after`, in id order.
	Page(ctx context.Context, contentID, after string, limit int) ([]ContentMember, error)
}

// GroupDirectory is what content needs to know of groups.
type GroupDirectory interface {
	// MemberRole returns the user's role in the group; ErrNotFound when
	// the user is not a member.
	MemberRole(ctx context.Context, groupID, userID string) (string, error)
	// GroupIDsOf lists the groups the user is a member of.
	GroupIDsOf(ctx context.Context, userID string) ([]string, error)
	// Exists reports whether the group exists.
	Exists(ctx context.Context, id string) (bool, error)
}

// ContentConfig holds the content tunables.
type ContentConfig struct {
	// SyncFanoutLimit: items with at most this many members are fanned out
	// before a change answers; larger ones finish in the background.
	SyncFanoutLimit int
	// FanoutConcurrency bounds the member libraries written at once.
	FanoutConcurrency int
	// Now is the clock.
	Now func() time.Time
}

// ContentHooks let tests stop a fan-out part-way, as a crash would.
type ContentHooks struct {
	// BeforeMember is called before each member library is written; an
	// error stops the fan-out there (the outbox entry stays).
	BeforeMember func(contentID, principalID string) error
}

// Contents is content, sharing and the libraries kept from it.
type Contents struct {
	cfg      ContentConfig
	accounts *Accounts
	groups   GroupDirectory
	content  ContentStore
	members  ContentMemberStore
	library  LibraryStore
	outbox   Outbox
	// Hooks are nil in production.
	Hooks ContentHooks
	// background tracks fan-outs finishing after their change answered.
	background chan struct{}
}

// NewContents wires the service.
func NewContents(cfg ContentConfig, accounts *Accounts, groups GroupDirectory, content ContentStore, members ContentMemberStore, library LibraryStore, outbox Outbox) *Contents {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.FanoutConcurrency <= 0 {
		cfg.FanoutConcurrency = 16
	}
	if cfg.SyncFanoutLimit < 0 {
		cfg.SyncFanoutLimit = 0
	}
	return &Contents{cfg: cfg, accounts: accounts, groups: groups, content: content, members: members,
		library: library, outbox: outbox, background: make(chan struct{}, 64)}
}

var errContentNotFound = &Error{Kind: ErrNotFound, Code: "not_found", Message: "No such content."}

// ContentInput is a new item or a change; nil fields stay as they are.
type ContentInput struct {
	Name        *string
	Description *string
	Visibility  *string
	Link        *string
}

// apply checks in and writes it onto c.
func (in ContentInput) apply(c *Content) error {
	var fes []*FieldError
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		if n := utf8.RuneCountInString(name); n < 1 || n > 200 || hasControl(name) || hasInvisible(name) {
			fes = append(fes, &FieldError{Field: "name", Code: "format", Message: "must be 1-200 characters, no control or invisible characters"})
		}
		c.Name = name
	}
	if in.Description != nil {
		if utf8.RuneCountInString(*in.Description) > 5000 || hasControl(*in.Description) {
			fes = append(fes, &FieldError{Field: "description", Code: "format", Message: "must be at most 5000 characters, no control characters"})
		}
		c.Description = *in.Description
	}
	if in.Visibility != nil {
		switch v := Visibility(*in.Visibility); v {
		case VisibilityPublic, VisibilityLoggedIn, VisibilityPrivate:
			c.Visibility = v
		default:
			fes = append(fes, &FieldError{Field: "visibility", Code: "oneof", Message: "must be public, loggedin or private"})
		}
	}
	if in.Link != nil {
		c.Link = strings.TrimSpace(*in.Link)
		if c.Link != "" {
			u, err := url.Parse(c.Link)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(c.Link) > 2048 {
				fes = append(fes, &FieldError{Field: "link", Code: "format", Message: "must be an http or https URL of at most 2048 characters"})
			}
		}
	}
	return invalidFields(fes...)
}

// access is what a caller may do with an item.
type access struct {
	see    bool
	manage bool
	admin  bool
}

// accessTo works out the caller's access to c: public items are seen by
// everyone, loggedin ones by any session, private ones by members (directly
// or through a group) and admins; managers (directly or through a group in
// which... the group is the member) manage.
func (s *Contents) accessTo(ctx context.Context, p Principal, c Content) (access, error) {
	var a access
	if p.Anonymous() {
		a.see = c.Visibility == VisibilityPublic
		return a, nil
	}
	principals := []string{p.UserID}
	groupIDs, err := s.groups.GroupIDsOf(ctx, p.UserID)
	if err != nil {
		return a, err
	}
	principals = append(principals, groupIDs...)
	found, err := s.members.Find(ctx, c.ID, principals)
	if err != nil {
		return a, err
	}
	for _, m := range found {
		a.see = true
		if m.Role == RoleManager {
			a.manage = true
		}
	}
	if !a.see || !a.manage {
		caller, err := s.accounts.caller(ctx, p)
		if err != nil {
			return a, err
		}
		if caller != nil && caller.IsAdmin() && caller.Status == StatusActive {
			a.admin, a.see = true, true
		}
	}
	if c.Visibility != VisibilityPrivate {
		a.see = true
	}
	return a, nil
}

// load reads a live item and the caller's access; 404 when the caller may
// not see it.
func (s *Contents) load(ctx context.Context, p Principal, id string) (Content, access, error) {
	if !ValidID(id, ContentIDPrefix) {
		return Content{}, access{}, errContentNotFound
	}
	c, err := s.content.Get(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && c.Deleted) {
		return Content{}, access{}, errContentNotFound
	}
	if err != nil {
		return Content{}, access{}, err
	}
	a, err := s.accessTo(ctx, p, c)
	if err != nil {
		return Content{}, access{}, err
	}
	if !a.see {
		return Content{}, access{}, errContentNotFound
	}
	return c, a, nil
}

// Get returns an item the caller may see.
func (s *Contents) Get(ctx context.Context, p Principal, id string) (Content, error) {
	c, _, err := s.load(ctx, p, id)
	return c, err
}
