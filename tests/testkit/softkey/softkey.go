// Package softkey is a passkey in software for tests: an authenticator
// that answers WebAuthn's options (navigator.credentials.create and get,
// as JSON) the way a browser and a platform authenticator together do,
// with ES256 keys, "none" attestation and a signature counter. It lets
// end-to-end tests register and use passkeys without a browser (the
// browser walk uses Chromium's virtual authenticator).
package softkey

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// Key is one authenticator, at one origin, holding the passkeys it made.
type Key struct {
	// Origin is the page's origin the browser reports (clientDataJSON).
	Origin string
	// NoCounter makes it keep no signature counter (0 always), as synced
	// passkeys do.
	NoCounter bool
	// NextID, when set, is the id of the next credential Create makes,
	// as an authenticator of an attacker's own may choose: one the
	// account has already.
	NextID []byte

	mu    sync.Mutex
	creds []*credential
}

type credential struct {
	id    []byte
	rpID  string
	user  []byte
	key   *ecdsa.PrivateKey
	count uint32
}

// New is an authenticator answering for origin.
func New(origin string) *Key { return &Key{Origin: origin} }

var b64 = base64.RawURLEncoding

// creationOptions is what Create reads of navigator.credentials.create's
// options.
type creationOptions struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RP        struct {
			ID string `json:"id"`
		} `json:"rp"`
		User struct {
			ID string `json:"id"`
		} `json:"user"`
		Exclude []struct {
			ID string `json:"id"`
		} `json:"excludeCredentials"`
	} `json:"publicKey"`
}

// Create answers registration options with a new passkey: the
// PublicKeyCredential as JSON (its toJSON()).
func (k *Key) Create(options []byte) ([]byte, error) {
	var o creationOptions
	if err := json.Unmarshal(options, &o); err != nil {
		return nil, err
	}
	pk := o.PublicKey
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, e := range pk.Exclude {
		if k.find(e.ID) != nil {
			return nil, errors.New("softkey: this authenticator holds an excluded credential (InvalidStateError)")
		}
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 32)
	_, _ = rand.Read(id)
	if k.NextID != nil {
		id, k.NextID = k.NextID, nil
	}
	user, err := b64.DecodeString(pk.User.ID)
	if err != nil {
		return nil, fmt.Errorf("softkey: user.id: %w", err)
	}
	c := &credential{id: id, rpID: pk.RP.ID, user: user, key: priv}
	k.creds = append(k.creds, c)
	cose, err := coseKey(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	auth := authData(c.rpID, 0x01|0x04|0x40, k.next(c))
	auth = append(auth, make([]byte, 16)...) // AAGUID: none
	auth = binary.BigEndian.AppendUint16(auth, uint16(len(id)))
	auth = append(auth, id...)
	auth = append(auth, cose...)
	att, err := cbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": auth})
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"id": b64.EncodeToString(id), "rawId": b64.EncodeToString(id), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(k.clientData("webauthn.create", pk.Challenge)),
			"attestationObject": b64.EncodeToString(att),
			"transports":        []string{"internal"},
		},
	})
}

// requestOptions is what Get reads of navigator.credentials.get's.
type requestOptions struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RPID      string `json:"rpId"`
		Allow     []struct {
			ID string `json:"id"`
		} `json:"allowCredentials"`
	} `json:"publicKey"`
}

// Get answers request options with an assertion of the first allowed
// passkey it holds: the PublicKeyCredential as JSON.
func (k *Key) Get(options []byte) ([]byte, error) {
	var o requestOptions
	if err := json.Unmarshal(options, &o); err != nil {
		return nil, err
	}
	pk := o.PublicKey
	k.mu.Lock()
	defer k.mu.Unlock()
	var c *credential
	for _, a := range pk.Allow {
		if c = k.find(a.ID); c != nil && c.rpID == pk.RPID {
			break
		}
		c = nil
	}
	if c == nil {
		return nil, errors.New("softkey: no allowed credential here (NotAllowedError)")
	}
	client := k.clientData("webauthn.get", pk.Challenge)
	auth := authData(c.rpID, 0x01|0x04, k.next(c))
	sum := sha256.Sum256(client)
	digest := sha256.Sum256(slices.Concat(auth, sum[:]))
	sig, err := ecdsa.SignASN1(rand.Reader, c.key, digest[:])
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"id": b64.EncodeToString(c.id), "rawId": b64.EncodeToString(c.id), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(client),
			"authenticatorData": b64.EncodeToString(auth),
			"signature":         b64.EncodeToString(sig),
			"userHandle":        b64.EncodeToString(c.user),
		},
	})
}

// Rewind sets every passkey's counter back by n: what a copy of the key
// would report.
func (k *Key) Rewind(n uint32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.creds {
		c.count -= min(n, c.count)
	}
}

func (k *Key) find(id string) *credential {
	raw, err := b64.DecodeString(id)
	if err != nil {
		return nil
	}
	for _, c := range k.creds {
		if string(c.id) == string(raw) {
			return c
		}
	}
	return nil
}

// next moves c's counter on (unless the key keeps none) and returns it.
func (k *Key) next(c *credential) uint32 {
	if k.NoCounter {
		return 0
	}
	c.count++
	return c.count
}

func (k *Key) clientData(typ, challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": k.Origin, "crossOrigin": false})
	return b
}

// authData is the authenticator data's head: the relying party id's
// hash, the flags, the counter.
func authData(rpID string, flags byte, count uint32) []byte {
	h := sha256.Sum256([]byte(rpID))
	return binary.BigEndian.AppendUint32(append(h[:], flags), count)
}

// coseKey is an ES256 public key as a COSE_Key (RFC 9053): EC2, P-256.
func coseKey(pub *ecdsa.PublicKey) ([]byte, error) {
	raw, err := pub.Bytes() // 0x04 || x || y
	if err != nil {
		return nil, err
	}
	return cbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: raw[1:33], -3: raw[33:65]})
}
