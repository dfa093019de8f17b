package handlers

import "time"

// timestampLayout is every time an answer carries: UTC with exactly three
// fractional digits. time.Time's own JSON (RFC3339Nano) drops trailing
// zeros, so one answer said …02.34Z beside another's …02.333Z: valid RFC
// 3339 both, but a client that sorts or compares the strings misorders
// them. Milliseconds are what the database keeps (Cassandra's timestamp),
// so no digit is lost.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// timestamp is a time.Time that marshals as timestampLayout in UTC.
type timestamp time.Time

// MarshalJSON writes t in UTC with milliseconds.
func (t timestamp) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(timestampLayout)+2)
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, timestampLayout)
	return append(b, '"'), nil
}

// stamp is t as an answer carries it.
func stamp(t time.Time) timestamp { return timestamp(t) }

// optionalStamp is t as an answer carries an optional time: nil when t is
// zero (no end, for a suspension without one).
func optionalStamp(t time.Time) *timestamp {
	if t.IsZero() {
		return nil
	}
	s := timestamp(t)
	return &s
}
