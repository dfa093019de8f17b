package library

import "time"

// Entry is one item in one principal's library, as of a version:
// what its rows show, and what the membership index says.
type Entry struct {
	PrincipalID  string
	ContentID    string
	Role         string
	Name         string
	Visibility   Visibility
	LastModified time.Time
	Version      int
	// Lean: a page shows the row without reading the item (its item's
	// changes remove it first); otherwise the page checks it against the
	// index and the item. Rows without the column (written before
	// migration 025) read as not lean.
	Lean bool
}

// entryOf is c as principal's library shows it.
func entryOf(c Content, principalID, role string) Entry {
	return Entry{PrincipalID: principalID, ContentID: c.ID, Role: role, Name: c.Name,
		Visibility: c.Visibility, LastModified: c.LastModified, Version: c.Version, Lean: c.Lean}
}
