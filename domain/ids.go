package domain

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// Id prefixes say what an id names (docs/design/api-conventions.md).
const (
	UserIDPrefix    = "u_"
	GroupIDPrefix   = "g_"
	ContentIDPrefix = "c_"
	// SessionIDPrefix names a session in its owner's list (Session.ID).
	SessionIDPrefix = "s_"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns prefix + 128 random bits in lower-case base32 (26
// characters): unguessable, so ids can be shown without leaking counts.
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + idEncoding.EncodeToString(b[:])
}

// ValidID reports whether s looks like an id with the prefix; routes use it
// to answer 404 without a database read for malformed ids.
func ValidID(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != 26 {
		return false
	}
	if idDigits(rest) {
		return true // what the decode below finds, without decoding
	}
	var b [16]byte // 26 base32 digits are 16 bytes and 2 bits
	_, err := idEncoding.Decode(b[:], []byte(rest))
	return err == nil
}

// idDigits reports whether s is all digits of idEncoding: 26 of them
// decode (the decoder also skips line breaks, so s may still be an id
// when this is false).
func idDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// EncodeID writes b as ids write their random part (lower-case base32).
func EncodeID(b []byte) string { return idEncoding.EncodeToString(b) }
