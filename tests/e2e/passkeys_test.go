//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"shelf/internal/app"
	"shelf/tests/testkit"
	"shelf/tests/testkit/softkey"
)

// passkeyOrigin is the console's origin the tests' passkeys answer from:
// the relying party of passkeyEnv.
const passkeyOrigin = "http://localhost:8080"

var passkeyEnv = map[string]string{"SHELF_WEBAUTHN_RP_ID": "localhost", "SHELF_WEBAUTHN_ORIGINS": passkeyOrigin}

// newPasskeyApp serves db with passkeys (passkeyEnv) and env, mailing to
// mp (with factorKeys: its public URL is not this machine), so that its
// users verify their address (verifiedUser) before they add a factor.
func newPasskeyApp(t *testing.T, db *testkit.DB, mp *testkit.Mailpit, env map[string]string) (*app.App, *testkit.API) {
	t.Helper()
	all := maps.Clone(env)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, passkeyEnv)
	maps.Copy(all, factorKeys)
	return newMailApp(t, db, mp, all)
}

// registerPasskey registers a passkey of key for userID (as me), with
// proof added to the password, and returns the factor's id and the
// recovery codes (for a first factor; none for a later one).
func registerPasskey(t *testing.T, me *testkit.API, userID string, key *softkey.Key, proof map[string]any) (string, []string) {
	t.Helper()
	body := map[string]any{"name": "laptop", "currentPassword": testPassword}
	for k, v := range proof {
		body[k] = v
	}
	r := me.Send(http.MethodPost, "/v1/users/"+userID+"/passkeys", body)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("begin a passkey: %d %s", r.StatusCode, r.Body)
	}
	var e struct {
		Factor struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		} `json:"factor"`
		Options json.RawMessage `json:"options"`
	}
	r.JSON(t, &e)
	if e.Factor.Kind != "passkey" {
		t.Fatalf("a passkey's enrolment: %s", r.Body)
	}
	answer, err := key.Create(e.Options)
	if err != nil {
		t.Fatal(err)
	}
	r = me.Send(http.MethodPost, "/v1/users/"+userID+"/passkeys/"+e.Factor.ID+"/registration", map[string]any{"credential": json.RawMessage(answer)})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("register the passkey: %d %s", r.StatusCode, r.Body)
	}
	var c struct {
		RecoveryCodes []string `json:"recoveryCodes"`
	}
	r.JSON(t, &c)
	return e.Factor.ID, c.RecoveryCodes
}

// passkeyChallenge logs in with the password: the challenge and its
// passkey options.
func passkeyChallenge(t *testing.T, api *testkit.API, loginName string) (string, json.RawMessage) {
	t.Helper()
	r := login(api, loginName, testPassword)
	var c struct {
		Challenge string          `json:"challenge"`
		Methods   []string        `json:"methods"`
		Passkey   json.RawMessage `json:"passkey"`
	}
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("a password login of an account with a passkey: %d %s", r.StatusCode, r.Body)
	}
	r.JSON(t, &c)
	if !slices.Contains(c.Methods, "passkey") || len(c.Passkey) == 0 {
		t.Fatalf("the challenge of an account with a passkey: %s", r.Body)
	}
	return c.Challenge, c.Passkey
}

// passkeySession answers challenge with key and requires the session it
// opens (201); it returns the session and the answer sent.
func passkeySession(t *testing.T, api *testkit.API, key *softkey.Key, challenge string, options json.RawMessage) (sessionBody, []byte) {
	t.Helper()
	answer, err := key.Get(options)
	if err != nil {
		t.Fatal(err)
	}
	r := passkeyStep(api, challenge, answer)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("the passkey's answer: %d %s", r.StatusCode, r.Body)
	}
	var s sessionBody
	r.JSON(t, &s)
	return s, answer
}

func passkeyStep(api *testkit.API, challenge string, answer []byte) *testkit.Response {
	return api.Send(http.MethodPost, "/v1/sessions/second-factor", map[string]any{"challenge": challenge, "passkey": json.RawMessage(answer)})
}

// TestAPasskeyIsASecondFactor: a passkey registered with the password
// makes the password answer a challenge on both processes; the key's
// answer to it opens one session (made with password+passkey); an
// answer replayed, on its challenge or another, a copied key (its
// counter behind), and a thief's codes open nothing; one answer on one
// challenge raced twice makes one session.
func TestAPasskeyIsASecondFactor(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.NewDB(t)
	_, one := newPasskeyApp(t, db, mp, nil)
	_, two := newPasskeyApp(t, db, mp, nil)
	u, me := verifiedUser(t, one, mp, name("passkey")) // a factor takes a verified address
	key := softkey.New(passkeyOrigin)
	_, recovery := registerPasskey(t, me, u.ID, key, nil)
	if len(recovery) != 10 {
		t.Fatalf("a first passkey shows %d recovery codes, want 10", len(recovery))
	}

	// Wrong answers count against the account's throttle (5 from one
	// address, those in flight included): each is tried on one process.
	for _, api := range []*testkit.API{one, two} {
		ch, options := passkeyChallenge(t, api, u.Username)
		if api == one {
			if r := secondStep(api, ch, "code", "000000"); r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a thief's code on a passkey account: %d %s", r.StatusCode, r.Body)
			}
		}
		s, answer := passkeySession(t, api, key, ch, options)
		for _, info := range sessionsOf(t, api.As(s.Token), u.ID, 50) {
			if info.Current && strings.Join(info.MadeWith, "+") != "password+passkey" {
				t.Fatalf("the session of a passkey says it was made with %v", info.MadeWith)
			}
		}
		if r := passkeyStep(api, ch, answer); r.StatusCode != http.StatusUnauthorized || r.Problem(t).Code != "invalid_challenge" {
			t.Fatalf("the answer again on its used challenge: %d %s", r.StatusCode, r.Body)
		}
		if api == two {
			other, _ := passkeyChallenge(t, api, u.Username)
			if r := passkeyStep(api, other, answer); r.StatusCode != http.StatusUnauthorized || r.Problem(t).Code != "invalid_passkey" {
				t.Fatalf("an old answer on a new challenge: %d %s", r.StatusCode, r.Body)
			}
		}
	}

	// One answer on one challenge, sent to both processes at once.
	ch, options := passkeyChallenge(t, one, u.Username)
	answer, err := key.Get(options)
	if err != nil {
		t.Fatal(err)
	}
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	for i, api := range []*testkit.API{one, two} {
		wg.Go(func() { statuses[i] = passkeyStep(api, ch, answer).StatusCode })
	}
	wg.Wait()
	if (statuses[0] == http.StatusCreated) == (statuses[1] == http.StatusCreated) {
		t.Fatalf("one answer twice at once: %v, want one 201", statuses)
	}

	// A copy of the key reports a counter behind the stored one.
	key.Rewind(3)
	ch, options = passkeyChallenge(t, two, u.Username)
	answer, err = key.Get(options)
	if err != nil {
		t.Fatal(err)
	}
	if r := passkeyStep(two, ch, answer); r.StatusCode != http.StatusUnauthorized || r.Problem(t).Code != "invalid_passkey" {
		t.Fatalf("a copied key (counter behind): %d %s", r.StatusCode, r.Body)
	}
	if r := secondStep(two, ch, "recoveryCode", recovery[0]); r.StatusCode != http.StatusCreated {
		t.Fatalf("a recovery code on a passkey account: %d %s", r.StatusCode, r.Body)
	}
}

// proofChallenge asks for a proof's challenge and signs it with key: the
// passkey proof of a sensitive change.
func proofChallenge(t *testing.T, me *testkit.API, userID string, key *softkey.Key) map[string]any {
	t.Helper()
	r := me.Send(http.MethodPost, "/v1/users/"+userID+"/passkey-challenges", nil)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("a proof's challenge: %d %s", r.StatusCode, r.Body)
	}
	var c struct {
		Challenge string          `json:"challenge"`
		Options   json.RawMessage `json:"options"`
	}
	r.JSON(t, &c)
	answer, err := key.Get(c.Options)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"challenge": c.Challenge, "credential": json.RawMessage(answer)}
}

// TestAPasskeyProvesTheOwner: with a passkey as the only factor, what
// takes the account takes the password and a passkey's proof (its
// challenge single-use); a second passkey is added with the first's
// proof, both are listed, and one is removed with the other's.
func TestAPasskeyProvesTheOwner(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.NewDB(t)
	_, api := newPasskeyApp(t, db, mp, nil)
	u, me := verifiedUser(t, api, mp, name("pkowner")) // a factor takes a verified address
	laptop := softkey.New(passkeyOrigin)
	first, _ := registerPasskey(t, me, u.ID, laptop, nil)

	renamed := name("pkrenamed")
	rename := map[string]any{"username": renamed, "currentPassword": testPassword}
	if r := me.Send(http.MethodPatch, "/v1/users/"+u.ID, rename); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("a rename with the password alone: %d %s", r.StatusCode, r.Body)
	}
	// A credential that is not an object is refused naming it.
	for _, bad := range []map[string]any{
		{"currentPassword": testPassword, "passkey": map[string]any{"challenge": "x", "credential": "[Filtered]"}},
		{"currentPassword": testPassword, "passkey": "x"},
	} {
		r := me.Send(http.MethodPost, "/v1/users/"+u.ID+"/deletion", bad)
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), `"field":"passkey`) {
			t.Fatalf("a deletion with a malformed passkey %v: %d %s", bad["passkey"], r.StatusCode, r.Body)
		}
	}
	if r := api.Send(http.MethodPost, "/v1/sessions/second-factor", map[string]any{"challenge": "c", "passkey": 7}); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("a second step with a passkey of 7: %d %s", r.StatusCode, r.Body)
	}
	proof := proofChallenge(t, me, u.ID, laptop)
	rename["passkey"] = proof
	if r := me.Send(http.MethodPatch, "/v1/users/"+u.ID, rename); r.StatusCode != http.StatusOK {
		t.Fatalf("a rename with a passkey's proof: %d %s", r.StatusCode, r.Body)
	}
	rename["username"] = name("pkagain")
	if r := me.Send(http.MethodPatch, "/v1/users/"+u.ID, rename); r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), "passkey.challenge") {
		t.Fatalf("the same proof again: %d %s, want 400 naming passkey.challenge", r.StatusCode, r.Body)
	}

	phone := softkey.New(passkeyOrigin)
	phone.NoCounter = true // a synced passkey
	second, codes := registerPasskey(t, me, u.ID, phone, map[string]any{"passkey": proofChallenge(t, me, u.ID, laptop)})
	if len(codes) != 0 {
		t.Fatalf("a second factor showed recovery codes: %v", codes)
	}
	var list struct {
		Items []struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		} `json:"items"`
	}
	readFactors(t, me, u.ID, &list)
	if len(list.Items) != 2 || list.Items[0].Kind != "passkey" || list.Items[1].Kind != "passkey" {
		t.Fatalf("two passkeys listed as %+v", list.Items)
	}
	// The synced passkey (no counter) logs in, twice.
	for range 2 {
		ch, options := passkeyChallenge(t, api, renamed)
		answer, err := phone.Get(options)
		if err != nil {
			t.Fatal(err)
		}
		if r := passkeyStep(api, ch, answer); r.StatusCode != http.StatusCreated {
			t.Fatalf("a passkey without a counter: %d %s", r.StatusCode, r.Body)
		}
	}
	if r := me.Send(http.MethodPost, "/v1/users/"+u.ID+"/factors/"+first+"/removal",
		map[string]any{"currentPassword": testPassword, "passkey": proofChallenge(t, me, u.ID, phone)}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("removing the laptop's passkey with the phone's: %d %s", r.StatusCode, r.Body)
	}
	readFactors(t, me, u.ID, &list)
	if len(list.Items) != 1 || list.Items[0].ID != second {
		t.Fatalf("after the removal: %+v", list.Items)
	}
}

// TestAnAdminsPasskeySessionHasAdminPowers: under
// SHELF_REQUIRE_ADMIN_FACTOR an admin whose second factor is a passkey
// acts as an admin with the session the passkey's answer opened (made
// with password+passkey), as with an app's code; the password's
// challenge alone opens nothing.
func TestAnAdminsPasskeySessionHasAdminPowers(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	mp := testkit.StartMailpit(t)
	a, api := newPasskeyApp(t, db, mp, map[string]string{"SHELF_REQUIRE_ADMIN_FACTOR": "true"})
	u, me := verifiedUser(t, api, mp, name("keyadmin")) // a factor takes a verified address
	if _, err := a.Accounts.SetAdmin(context.Background(), u.Username, true); err != nil {
		t.Fatal(err)
	}
	key := softkey.New(passkeyOrigin)
	registerPasskey(t, me, u.ID, key, nil)
	ch, options := passkeyChallenge(t, api, u.Username)
	s, _ := passkeySession(t, api, key, ch, options)
	if r := api.As(s.Token).Get("/v1/suspensions"); r.StatusCode != http.StatusOK {
		t.Fatalf("an admin's session with a passkey: %d %s, want 200", r.StatusCode, r.Body)
	}
}
