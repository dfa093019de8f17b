// Package factor makes and checks the secrets of authenticator apps
// (TOTP, RFC 6238) for accounts.Service, with github.com/pquerna/otp:
// a well-kept implementation of RFC 4226/6238, its otpauth:// URIs and
// their QR codes (through github.com/boombuler/barcode). What it stores
// of a secret is sealed with AES-256-GCM under a key from the settings
// (SHELF_FACTOR_KEYS), so a read of the database alone cannot make codes.
package factor

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"

	"shelf/domain/accounts"
)

// Period is a code's time step; Digits its length. Both are what every
// authenticator app assumes when a URI names neither.
const (
	Period = 30
	Digits = otp.DigitsSix
)

// Key is one sealing key: its id, written before every secret it seals,
// and 32 bytes for AES-256.
type Key struct {
	ID     string
	Secret []byte
}

// ParseKeys reads SHELF_FACTOR_KEYS: "id:base64,id:base64...", 32 bytes
// each (openssl rand -base64 32). The first seals; every one opens, so a
// rotation adds the new key first and keeps the old ones until every
// secret was sealed again (docs/design/second-factors.md).
func ParseKeys(s string) ([]Key, error) {
	var keys []Key
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, b64, ok := strings.Cut(part, ":")
		if !ok || id == "" || strings.ContainsAny(id, ".:") {
			return nil, fmt.Errorf("a factor key is id:base64 (id without '.' or ':'), got %q", redact(part))
		}
		secret, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(secret) != 32 {
			return nil, fmt.Errorf("factor key %q: want 32 bytes in base64 (openssl rand -base64 32)", id)
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	if len(keys) == 0 {
		return nil, errors.New("no factor key")
	}
	return keys, nil
}

// redact is what an error shows of a malformed key: its id, and nothing
// of its secret. A key with no ':' may be a bare secret (the output of
// openssl rand pasted alone): none of it is shown.
func redact(part string) string {
	id, _, ok := strings.Cut(part, ":")
	if !ok {
		return "… (no id: nothing shown)"
	}
	return id + ":…"
}

// DevelopmentKey is the key of a service whose SHELF_PUBLIC_URL is this
// machine and that has no SHELF_FACTOR_KEYS: fixed, so that every process
// of a development run (and its restarts) opens what another sealed.
// Whoever reads this source has it: it never seals a secret of a service
// others reach (config.FactorKeysOrDevelopment gives it only on a loopback
// SHELF_PUBLIC_URL; elsewhere, without SHELF_FACTOR_KEYS, second factors
// are off).
func DevelopmentKey() Key {
	sum := sha256.Sum256([]byte("shelf development factor key: never for a service others reach"))
	return Key{ID: "dev", Secret: sum[:]}
}

// TOTP is accounts.TOTP: the issuer shown in the app, and the sealing
// keys (the first seals).
type TOTP struct {
	Issuer string
	Keys   []Key
	aeads  map[string]cipher.AEAD
}

var _ accounts.TOTP = (*TOTP)(nil)

// New returns a TOTP for issuer, sealing with keys[0].
func New(issuer string, keys []Key) (*TOTP, error) {
	if len(keys) == 0 {
		return nil, errors.New("factor: no key")
	}
	t := &TOTP{Issuer: issuer, Keys: keys, aeads: map[string]cipher.AEAD{}}
	for _, k := range keys {
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("factor key %s: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		if _, dup := t.aeads[k.ID]; dup {
			return nil, fmt.Errorf("factor key %s given twice", k.ID)
		}
		t.aeads[k.ID] = aead
	}
	return t, nil
}

// New makes a secret for the account labelled account (its username):
// the sealed form to store, and the URI and QR code to show once.
func (t *TOTP) New(account, userID string) (string, accounts.TOTPSecret, error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: t.Issuer, AccountName: account, Period: Period,
		Digits: Digits, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return "", accounts.TOTPSecret{}, err
	}
	img, err := key.Image(256, 256)
	if err != nil {
		return "", accounts.TOTPSecret{}, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return "", accounts.TOTPSecret{}, err
	}
	sealed, err := t.seal(key.Secret(), userID)
	if err != nil {
		return "", accounts.TOTPSecret{}, err
	}
	return sealed, accounts.TOTPSecret{Secret: key.Secret(), URI: key.URL(), QRCodePNG: buf.Bytes()}, nil
}

// Step returns the time step, of the one before now's to the one after
// (a clock one step off is tolerated), whose code is code; ok is false
// when none is. Every candidate is compared, in constant time.
func (t *TOTP) Step(sealed, userID, code string, now time.Time) (int64, bool, error) {
	secret, err := t.open(sealed, userID)
	if err != nil {
		return 0, false, err
	}
	current := now.Unix() / Period
	var found int64
	ok := false
	for step := current - 1; step <= current+1; step++ {
		want, err := hotp.GenerateCodeCustom(secret, uint64(step), hotp.ValidateOpts{Digits: Digits, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			return 0, false, err
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 && !ok {
			found, ok = step, true
		}
	}
	return found, ok, nil
}

// Code is the code of step for a sealed secret: what an app shows (tests
// use it as the app).
func (t *TOTP) Code(sealed, userID string, step int64) (string, error) {
	secret, err := t.open(sealed, userID)
	if err != nil {
		return "", err
	}
	return hotp.GenerateCodeCustom(secret, uint64(step), hotp.ValidateOpts{Digits: Digits, Algorithm: otp.AlgorithmSHA1})
}

// Sealed reports whether sealed was sealed with the current key (false:
// an old one, to be sealed again).
func (t *TOTP) Sealed(sealed string) bool {
	id, _, _ := strings.Cut(sealed, ".")
	return id == t.Keys[0].ID
}

// seal encrypts secret under the current key, bound to the account
// (its id is the associated data: a sealed secret copied to another
// account's row does not open there): "keyid.base64(nonce|ciphertext)".
func (t *TOTP) seal(secret, userID string) (string, error) {
	k := t.Keys[0]
	aead := t.aeads[k.ID]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := aead.Seal(nonce, nonce, []byte(secret), []byte(userID))
	return k.ID + "." + base64.RawStdEncoding.EncodeToString(out), nil
}

// ErrUnsealable is a stored secret no configured key opens: its key was
// dropped from SHELF_FACTOR_KEYS, or the row was altered.
var ErrUnsealable = errors.New("factor: a stored secret opens with no configured key (SHELF_FACTOR_KEYS)")

func (t *TOTP) open(sealed, userID string) (string, error) {
	id, b64, ok := strings.Cut(sealed, ".")
	aead := t.aeads[id]
	if !ok || aead == nil {
		return "", ErrUnsealable
	}
	raw, err := base64.RawStdEncoding.DecodeString(b64)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", ErrUnsealable
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(userID))
	if err != nil {
		return "", ErrUnsealable
	}
	return string(plain), nil
}
