package lean

import (
	"encoding/json"
	"time"
)

// The api writes every time with three fractional digits, in UTC (its
// conventions in openapi.yaml); encoding/json writes as few as the value
// needs. The answers' types write theirs through stamp, so the bodies
// stay byte for byte the api's (TestLeanMatchesShelf).

// stampLayout is the api's form of a time.
const stampLayout = "2006-01-02T15:04:05.000Z07:00"

// stamp is t in the api's form.
func stamp(t time.Time) string { return t.UTC().Format(stampLayout) }

// MarshalJSON writes the user with its time in the api's form.
func (u User) MarshalJSON() ([]byte, error) {
	type plain User
	return json.Marshal(struct {
		plain
		CreatedAt string `json:"createdAt"`
	}{plain(u), stamp(u.CreatedAt)})
}

// MarshalJSON writes the item with its time in the api's form.
func (it Item) MarshalJSON() ([]byte, error) {
	type plain Item
	return json.Marshal(struct {
		plain
		LastModified string `json:"lastModified"`
	}{plain(it), stamp(it.LastModified)})
}

// MarshalJSON writes the suspension with its times in the api's form.
func (s Suspension) MarshalJSON() ([]byte, error) {
	type plain Suspension
	var until *string
	if s.Until != nil {
		u := stamp(*s.Until)
		until = &u
	}
	return json.Marshal(struct {
		plain
		SuspendedAt string  `json:"suspendedAt"`
		Until       *string `json:"until,omitempty"`
	}{plain(s), stamp(s.SuspendedAt), until})
}

// MarshalJSON writes the session with its time in the api's form.
func (s Session) MarshalJSON() ([]byte, error) {
	type plain Session
	return json.Marshal(struct {
		plain
		ExpiresAt string `json:"expiresAt"`
	}{plain(s), stamp(s.ExpiresAt)})
}
