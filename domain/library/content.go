package library

import (
	"regexp"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"shelf/domain"
)

// Visibility says who may see an item (L1, docs/design/invariants.md).
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

// Buckets lists a library's buckets, the widest view first: the private
// bucket's viewers see every item, the public bucket's only public ones.
// It is the one list of them: the stores write, and the rebuild sweeps,
// exactly these, so a new level is written everywhere or nowhere
// (TestEveryLevelHasItsBucket and TestOneBucketList hold it so).
func Buckets() []string { return []string{BucketPrivate, BucketLoggedIn, BucketPublic} }

// BucketsFor lists the buckets an item of visibility v is in: every bucket
// whose viewers may see v. A bucket is named after the most private
// visibility its viewers may see, so those are the buckets up to v's own
// (the private one alone for anything else).
func BucketsFor(v Visibility) []string {
	all := Buckets()
	return all[:max(slices.Index(all, string(v)), 0)+1]
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
	// Version counts the writes of the row after its creation (update,
	// share, unshare, delete, a share taken back, an update's place, the
	// outbox worker's fence); it is the write timestamp of everything a
	// change writes elsewhere.
	Version int
	// Pending is a share or unshare recorded at Version whose member row
	// and library may not be written yet; nil when there is none.
	Pending *MemberChange
	// Lean: the item's library rows are written lean, shown by a page
	// without reading the item, so every change that would make one of
	// them wrong removes them first (see narrow). An item is lean from its
	// creation until a share takes it past Config.LeanMembers members;
	// then every row is written again checked, and it stays so.
	Lean bool
	// Placing: an update of an item that is not lean is recorded with a
	// provisional LastModified, and its place in the libraries is taken
	// by a second compare-and-set once the first has answered (see
	// place). No library row is written at a provisional place.
	Placing bool
	// FencedBefore: every outbox mark the worker's fences of this item
	// took was made before this time (the latest any fence recorded; zero:
	// no fence recorded one). A change whose mark is not before it holds
	// a mark no fence took (see markAgainIfTaken).
	FencedBefore time.Time
	// TakenBack is the version of the latest share taken back because its
	// caller left the group that let him share (0: none recorded). A
	// share is recorded only on a row with nothing pending, so a request
	// whose clear finds the row moved on past its share at v reads here
	// whether that share stood (see shareStood).
	TakenBack int
}

// MemberChange is a share (a role) or an unshare (no role) of one
// principal, recorded in the item's row before it is carried out.
type MemberChange struct {
	PrincipalID string
	Role        string // "" for a removal
	// AskedBy and Through: a share whose caller managed the item only
	// through a group names the caller and that group, and PriorRole the
	// principal's role before it ("": no member). The group's membership
	// is no part of the item's version, so whoever finishes the share
	// checks the caller is still in the group, and else takes the share
	// back to PriorRole (see outOfTheGroup). Empty for every other change
	// (the caller's right is the item's own, or the system asked), for
	// rows from before they were recorded, and once the share's request
	// vouched for it (its check passed after it was recorded: see vouch):
	// finished as recorded.
	AskedBy, Through, PriorRole string
}

// Member is a principal an item is shared with.
type Member struct {
	PrincipalID string
	Role        string
}

// Input is a new item or a change; nil fields stay as they are.
type Input struct {
	Name        *string
	Description *string
	Visibility  *string
	Link        *string
}

// The rules of an item's text: names 1-200 characters, descriptions at
// most 5000 with line breaks and tabs, neither with white space at its
// ends nor invisible characters, stored in NFC (domain.TextRule).
var (
	nameRule        = domain.TextRule{Field: "name", Min: 1, Max: 200}
	descriptionRule = domain.TextRule{Field: "description", Max: 5000, Lines: true}
)

// apply checks in and writes it onto c.
func (in Input) apply(c *Content) error { return in.applyTo(c, false) }

// errRequired names a field a new item needs.
func errRequired(field string) *domain.FieldError {
	return &domain.FieldError{Field: field, Code: "required", Message: "is required"}
}

// applyTo is apply; creating, a missing name or visibility is refused
// too, beside every other field that is wrong, so one answer names them
// all.
func (in Input) applyTo(c *Content, creating bool) error {
	var fes []*domain.FieldError
	if creating && in.Name == nil {
		fes = append(fes, errRequired("name"))
	}
	if in.Name != nil {
		name, fe := nameRule.Check(*in.Name)
		fes = append(fes, fe)
		c.Name = name
	}
	if in.Description != nil {
		description, fe := descriptionRule.Check(*in.Description)
		fes = append(fes, fe)
		c.Description = description
	}
	if creating && in.Visibility == nil {
		fes = append(fes, errRequired("visibility"))
	}
	if in.Visibility != nil {
		switch v := Visibility(*in.Visibility); v {
		case VisibilityPublic, VisibilityLoggedIn, VisibilityPrivate:
			c.Visibility = v
		default:
			fes = append(fes, &domain.FieldError{Field: "visibility", Code: "oneof", Message: "must be public, loggedin or private"})
		}
	}
	if in.Link != nil {
		c.Link = *in.Link
		if fe := domain.Untrimmed("link", c.Link); fe != nil {
			fes = append(fes, fe)
		} else if c.Link != "" && !ValidLink(c.Link) {
			fes = append(fes, &domain.FieldError{Field: "link", Code: "format", Message: "must be an http or https URL of at most 2048 characters, its host a DNS name or IPv4 address in ASCII"})
		}
	}
	return domain.InvalidFields(fes...)
}

// linkShape is a link's structure: http or https; a host that is a DNS
// name or an IPv4 address in ASCII (international names in punycode); an
// optional port; then a path, query or fragment whose %-escapes are
// valid. openapi.yaml's pattern for link is this, with the characters
// ValidLink refuses besides (white space at either end is refused, as in
// every text field: domain.Untrimmed).
var linkShape = regexp.MustCompile(`^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?(?:[/?#](?:[^%]|%[0-9A-Fa-f]{2})*)?$`)

// ValidLink reports whether a non-empty link is one shelf stores:
// linkShape, at most 2048 characters, no blank space inside and none of
// the characters a field people read refuses wherever they stand. Every
// such link parses with net/url, its scheme http or https and its host
// set.
func ValidLink(s string) bool {
	if utf8.RuneCountInString(s) > 2048 || !linkShape.MatchString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || domain.RefusedInText(r, false) {
			return false
		}
	}
	return true
}
