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
}

// entryOf is c as principal's library shows it.
func entryOf(c Content, principalID, role string) Entry {
	return Entry{PrincipalID: principalID, ContentID: c.ID, Role: role, Name: c.Name,
		Visibility: c.Visibility, LastModified: c.LastModified, Version: c.Version}
}
