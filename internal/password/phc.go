package password

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// b64 is the PHC format's base64: standard alphabet, no padding.
var b64 = base64.RawStdEncoding

// phcHash is a parsed PHC string.
type phcHash struct {
	p    Params
	salt []byte
	key  []byte
}

// format renders an argon2id PHC string.
func format(p Params, salt, key []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// parse reads a PHC string written by format. It is strict, accepting only
// the canonical form, so a corrupted or foreign value is reported rather than
// silently verified with parameters nobody chose. Its errors never quote the
// input: a PHC string is a secret-derived value and does not belong in logs.
func parse(phc string) (phcHash, error) {
	fields := strings.Split(phc, "$")
	// A leading "$" makes fields[0] empty; exactly five fields must follow.
	if len(fields) != 6 || fields[0] != "" {
		return phcHash{}, malformed("want 5 $-separated fields")
	}
	if fields[1] != "argon2id" {
		return phcHash{}, malformed("algorithm is not argon2id")
	}
	if fields[2] != "v="+strconv.Itoa(argon2.Version) {
		return phcHash{}, malformed("version is not 19")
	}
	p, err := parseParams(fields[3])
	if err != nil {
		return phcHash{}, err
	}
	salt, err := decode(fields[4], "salt")
	if err != nil {
		return phcHash{}, err
	}
	key, err := decode(fields[5], "hash")
	if err != nil {
		return phcHash{}, err
	}
	return phcHash{p: p, salt: salt, key: key}, nil
}

// parseParams reads "m=<KiB>,t=<time>,p=<threads>" in that order.
func parseParams(s string) (Params, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return Params{}, malformed("want parameters m=,t=,p=")
	}
	m, err := parseParam(parts[0], "m", 32)
	if err != nil {
		return Params{}, err
	}
	t, err := parseParam(parts[1], "t", 32)
	if err != nil {
		return Params{}, err
	}
	p, err := parseParam(parts[2], "p", 8)
	if err != nil {
		return Params{}, err
	}
	return Params{MemoryKiB: uint32(m), Time: uint32(t), Threads: uint8(p)}, nil
}

// parseParam reads "<name>=<n>" with n a positive decimal that fits in bits.
// Zero is rejected because argon2 cannot run with it.
func parseParam(s, name string, bits int) (uint64, error) {
	v, ok := strings.CutPrefix(s, name+"=")
	if !ok {
		return 0, malformed("want parameter " + name)
	}
	n, err := strconv.ParseUint(v, 10, bits)
	// Comparing with the re-rendered number rejects leading zeros.
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != v {
		return 0, malformed("parameter " + name + " is not a positive integer in range")
	}
	return n, nil
}

// decode reads unpadded standard base64. Re-encoding and comparing rejects
// what the decoder alone would let through: embedded newlines and non-zero
// trailing bits.
func decode(s, what string) ([]byte, error) {
	b, err := b64.DecodeString(s)
	if err != nil || len(b) == 0 || b64.EncodeToString(b) != s {
		return nil, malformed(what + " is not non-empty unpadded base64")
	}
	return b, nil
}

func malformed(why string) error {
	return errors.New("password: malformed PHC string: " + why)
}
