package factor

import (
	"strings"
	"testing"
)

// TestMalformedKeysShowNoSecret: a key refused at start-up is named in
// the error by its id alone; a bare secret (no id, the likeliest mistake:
// openssl rand's output pasted as it is) shows none of itself.
func TestMalformedKeysShowNoSecret(t *testing.T) {
	t.Parallel()
	secret := "q0x3M2Vj8o1w7tJ1Ww5yP2k9Hq8v6R3n4U5b7C8d9E0="
	for _, c := range []struct{ keys, shows string }{
		{secret, "no id"},
		{"k1.bad:" + secret, "k1.bad"},
		{"k1:short", "k1"},
	} {
		_, err := ParseKeys(c.keys)
		if err == nil {
			t.Fatalf("%q was taken", c.keys)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("%q: the error shows the secret: %v", c.keys, err)
		}
		if !strings.Contains(err.Error(), c.shows) {
			t.Errorf("%q: the error %v does not say %q", c.keys, err, c.shows)
		}
	}
	keys, err := ParseKeys("k1:" + secret)
	if err != nil || len(keys) != 1 || keys[0].ID != "k1" {
		t.Fatalf("a good key: %+v %v", keys, err)
	}
}
