package lean

import "time"

// The api writes every time with three fractional digits, in UTC (its
// conventions in openapi.yaml); encoding/json writes as few as the value
// needs. An answer goes out as its wire form (wireOf), whose times are
// stampText, so the bodies stay byte for byte the api's
// (TestLeanMatchesShelf) at the api's cost: a time written as text, not
// through a MarshalJSON, whose output encoding/json validates again.

// stampLayout is the api's form of a time.
const stampLayout = "2006-01-02T15:04:05.000Z07:00"

// stampText is a time in the api's form.
type stampText time.Time

// MarshalText writes t in the api's form; JSON quotes it.
func (t stampText) MarshalText() ([]byte, error) {
	return time.Time(t).UTC().AppendFormat(make([]byte, 0, len(stampLayout)), stampLayout), nil
}

// wireOf is v as it goes out: its wire form if it has one.
func wireOf(v any) any {
	if w, ok := v.(interface{ wire() any }); ok {
		return w.wire()
	}
	return v
}

// The wire forms: each answer's fields, its times shadowed by stampText
// ones of the same name (encoding/json takes the shallower field).
type (
	userWire struct {
		User
		CreatedAt stampText `json:"createdAt"`
	}
	itemWire struct {
		Item
		LastModified stampText `json:"lastModified"`
	}
	suspensionWire struct {
		Suspension
		SuspendedAt stampText  `json:"suspendedAt"`
		Until       *stampText `json:"until,omitempty"`
	}
	sessionWire struct {
		Session
		ExpiresAt stampText `json:"expiresAt"`
		User      userWire  `json:"user"`
	}
)

func (u User) wire() any { return userWire{u, stampText(u.CreatedAt)} }

func (it Item) wire() any { return itemWire{it, stampText(it.LastModified)} }

func (s Suspension) wire() any {
	w := suspensionWire{Suspension: s, SuspendedAt: stampText(s.SuspendedAt)}
	if s.Until != nil {
		u := stampText(*s.Until)
		w.Until = &u
	}
	return w
}

func (s Session) wire() any {
	return sessionWire{Session: s, ExpiresAt: stampText(s.ExpiresAt), User: userWire{s.User, stampText(s.User.CreatedAt)}}
}

func (p Page[T]) wire() any {
	items := make([]any, len(p.Items))
	for i, it := range p.Items {
		items[i] = wireOf(it)
	}
	return Page[any]{Items: items, NextCursor: p.NextCursor}
}
