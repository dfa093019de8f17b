package domain

import (
	"math/rand/v2"
	"testing"
)

// TestValidIDIsItsDecode: ValidID answers what decoding the id's 26
// digits answers, for ids, ids with a digit or two changed to any byte
// (line breaks included, which the decoder skips), and other lengths.
func TestValidIDIsItsDecode(t *testing.T) {
	t.Parallel()
	decodes := func(s string) bool {
		rest, ok := cutID(s)
		if !ok {
			return false
		}
		var b [16]byte
		_, err := idEncoding.Decode(b[:], []byte(rest))
		return err == nil
	}
	rng := rand.New(rand.NewPCG(3, 4))
	odd := []byte("\r\nAZ01890=_-\x00\xff")
	for range 20_000 {
		id := []byte(NewID(UserIDPrefix))
		for range rng.IntN(3) {
			i := len(UserIDPrefix) + rng.IntN(26)
			if rng.IntN(2) == 0 {
				id[i] = odd[rng.IntN(len(odd))]
			} else {
				id[i] = byte(rng.IntN(256))
			}
		}
		s := string(id)
		if rng.IntN(10) == 0 {
			s = s[:rng.IntN(len(s))]
		}
		if got, want := ValidID(s, UserIDPrefix), decodes(s); got != want {
			t.Fatalf("ValidID(%q) = %v, decoding says %v", s, got, want)
		}
	}
	if !ValidID("u_"+"aaaaaaaaaaaaaaaaaaaaaaaa\r\n", UserIDPrefix) {
		t.Error("the decoder skips line breaks, and so did ValidID")
	}
}

// cutID is the part of s after the user prefix when it is 26 long.
func cutID(s string) (string, bool) {
	if len(s) != len(UserIDPrefix)+26 || s[:len(UserIDPrefix)] != UserIDPrefix {
		return "", false
	}
	return s[len(UserIDPrefix):], true
}

func BenchmarkValidID(b *testing.B) {
	id := NewID(UserIDPrefix)
	for b.Loop() {
		if !ValidID(id, UserIDPrefix) {
			b.Fatal(id)
		}
	}
}
