package handlers

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// timestampLayout is every time an answer carries: UTC with exactly three
// fractional digits. time.Time's own JSON (RFC3339Nano) drops trailing
// zeros, so …02.3Z would stand beside …02.34Z: valid RFC 3339 both, but a
// client that sorts or compares the strings puts the earlier one last
// ("Z" sorts after the digits). Milliseconds are what the database keeps
// (Cassandra's timestamp), so no digit is lost.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// timestamp is a time.Time that marshals as timestampLayout in UTC.
type timestamp time.Time

// MarshalText writes t in UTC with milliseconds; JSON quotes it. Text,
// not JSON: encoding/json runs a MarshalJSON's output through its
// validator again (compacting it into a new buffer), a cost for every
// time of every answer that MarshalText does not pay.
func (t timestamp) MarshalText() ([]byte, error) {
	return time.Time(t).UTC().AppendFormat(make([]byte, 0, len(timestampLayout)), timestampLayout), nil
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

// requestTime is a time a request sends (a suspension's until): any RFC
// 3339 time, as time.Time reads it. Anything else (a word, a number, a
// date alone) is a *json.UnmarshalTypeError, which encoding/json names
// with its field, so the problem names it (decodeProblem), where
// time.Time's own error would leave the body "not JSON".
type requestTime time.Time

// requestTimeType is requestTime's type, which decodeProblem tells apart.
var requestTimeType = reflect.TypeFor[requestTime]()

// UnmarshalJSON reads a JSON string holding an RFC 3339 time, its T and
// Z in either case (RFC 3339 section 5.6; Go's parser takes upper case
// alone, and they are the only letters a time holds). The string is read
// as JSON reads it, escapes included: .NET's encoder writes an offset's
// sign as \u002B, and time.Time's own UnmarshalJSON parses the raw bytes
// between the quotes (go.dev/issue/47353); its UnmarshalText is the same
// strict parser, on the string.
func (t *requestTime) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &s) != nil {
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: requestTimeType}
	}
	var v time.Time
	if err := v.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: requestTimeType}
	}
	*t = requestTime(v)
	return nil
}
