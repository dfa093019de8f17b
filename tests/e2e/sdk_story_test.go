//go:build integration

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/sdk/shelfclient"
	"shelf/tests/testkit"
	"shelf/tests/testkit/softkey"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// contractTransport checks every answer the SDK gets against openapi.yaml.
// With hosts, it sends each request to the next of them in turn (API
// instances behind a round-robin balancer).
type contractTransport struct {
	t        *testing.T
	contract *testkit.Contract
	hosts    []string
	sent     *atomic.Uint64
}

func (c contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(c.hosts) > 0 {
		req = req.Clone(req.Context())
		req.URL.Host = c.hosts[c.sent.Add(1)%uint64(len(c.hosts))]
		req.Host = req.URL.Host
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := c.contract.Check(req, resp, body); err != nil {
		c.t.Error(err)
	}
	return resp, nil
}

// sdk returns a generated client for the servers, as token (or
// anonymous); with several, its requests go to each in turn.
func sdk(t *testing.T, servers []string, token string) *shelfclient.ClientWithResponses {
	t.Helper()
	contract, err := testkit.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	tr := contractTransport{t: t, contract: contract, sent: new(atomic.Uint64)}
	if len(servers) > 1 {
		for _, s := range servers {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			tr.hosts = append(tr.hosts, u.Host)
		}
	}
	c, err := shelfclient.NewClientWithResponses(servers[0],
		shelfclient.WithHTTPClient(&http.Client{Transport: tr}),
		shelfclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStoryThroughTheGeneratedSDK drives one whole story through the
// generated Go client only: signup, login, the people search, content, a
// group, libraries seen by different viewers, moderation, sessions, an
// authenticator and a passkey, and a deletion.
func TestStoryThroughTheGeneratedSDK(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	mp := testkit.StartMailpit(t)
	a, api := newPasskeyApp(t, db, mp, nil)
	startWorker(t, a)
	sdkStory(t, []string{api.Server.URL}, mp, func(username string) error {
		_, err := runAdminOn(db, "grant", username)
		return err
	})
}

// TestStoryAcrossTwoInstances: the same story against two `api serve`
// processes (the real binary, each with its own background workers) on
// one keyspace, every request sent to the other of them in turn: a
// session made by one is honoured by the other, a suspension on one ends
// the session on the other, and so on. Instances share nothing but the
// database.
func TestStoryAcrossTwoInstances(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	bin := apiBinary(t)
	mp := testkit.StartMailpit(t)
	env := testkit.APIEnv(db, "SHELF_RATE_LIMIT_PER_MINUTE=0", "SHELF_WEBAUTHN_RP_ID=localhost", "SHELF_WEBAUTHN_ORIGINS="+passkeyOrigin,
		"SHELF_MAILER=smtp", "SHELF_SMTP_HOST="+mp.SMTPHost, "SHELF_SMTP_PORT="+strconv.Itoa(mp.SMTPPort), "SHELF_SMTP_TLS=none",
		"SHELF_PUBLIC_URL=https://shelf.example.org", "SHELF_MAIL_PER_HOUR=0", "SHELF_FACTOR_KEYS="+factorKeys["SHELF_FACTOR_KEYS"])
	var servers []string
	for range 2 {
		p, stop, err := testkit.Start(bin, []string{"serve"}, env, testkit.APIAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		servers = append(servers, p.Base)
	}
	sdkStory(t, servers, mp, func(username string) error {
		_, err := (&testkit.Process{Bin: bin, Env: env}).Admin("grant", username)
		return err
	})
	one, two := servedRequests(t, servers[0]), servedRequests(t, servers[1])
	if one+two < 15 || one < (one+two)/3 || two < (one+two)/3 {
		t.Errorf("the instances served %v and %v of the story's requests, want about half each", one, two)
	}
}

// servedRequests sums shelf_http_requests_total of the API at base, leaving
// out the probes and the metrics page.
func servedRequests(t *testing.T, base string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, m := range families["shelf_http_requests_total"].GetMetric() {
		route := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" {
				route = l.GetValue()
			}
		}
		if strings.HasPrefix(route, "/v1/") {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

var (
	apiOnce sync.Once
	apiBin  string
	apiErr  error
	binDir  string
)

// apiBinary builds cmd/api once for the package (TestMain removes it).
func apiBinary(t *testing.T) string {
	t.Helper()
	apiOnce.Do(func() {
		if binDir, apiErr = os.MkdirTemp("", "shelf-e2e-"); apiErr == nil {
			apiBin, apiErr = testkit.Build(binDir, "./cmd/api", "")
		}
	})
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	return apiBin
}

// sdkStory is the story, through the SDK, against servers mailing to
// mail; grant makes a user a moderator (`api admin grant`).
func sdkStory(t *testing.T, servers []string, mail *testkit.Mailpit, grant func(username string) error) {
	t.Helper()
	ctx := context.Background()
	anon := sdk(t, servers, "")

	signup := func(username string) shelfclient.User {
		r, err := anon.CreateUserWithResponse(ctx, shelfclient.NewUser{Username: username, Email: username + "@example.org", Password: testPassword})
		if err != nil || r.JSON201 == nil {
			t.Fatalf("signup %s: %v %s", username, err, r.Body)
		}
		return *r.JSON201
	}
	login := func(username string) *shelfclient.ClientWithResponses {
		r, err := anon.CreateSessionWithResponse(ctx, shelfclient.Login{Login: username, Password: testPassword})
		if err != nil || r.JSON201 == nil {
			t.Fatalf("login %s: %v %s", username, err, r.Body)
		}
		return sdk(t, servers, r.JSON201.Token)
	}
	aliceName, bobName, carolName := name("alice"), name("bob"), name("carol")
	alice, bob := signup(aliceName), signup(bobName)
	signup(carolName)
	if err := grant(carolName); err != nil {
		t.Fatal(err)
	}
	asAlice, asBob, asCarol := login(aliceName), login(bobName), login(carolName)

	// Alice finds bob by the whole of his username, in capitals: his
	// public view, without an email.
	people, err := asAlice.SearchPeopleWithResponse(ctx, &shelfclient.SearchPeopleParams{Prefix: strings.ToUpper(bobName)})
	if err != nil || people.JSON200 == nil || len(people.JSON200.Items) != 1 || people.JSON200.Items[0].Id != bob.Id || people.JSON200.Items[0].Email != nil {
		t.Fatalf("people named bob: %v %s", err, people.Body)
	}

	public, err := asAlice.CreateContentWithResponse(ctx, shelfclient.NewContent{Name: "hello", Visibility: shelfclient.VisibilityPublic})
	if err != nil || public.JSON201 == nil {
		t.Fatalf("create: %v %s", err, public.Body)
	}
	secret, err := asAlice.CreateContentWithResponse(ctx, shelfclient.NewContent{Name: "secret", Visibility: shelfclient.VisibilityPrivate})
	if err != nil || secret.JSON201 == nil {
		t.Fatalf("create: %v %s", err, secret.Body)
	}
	group, err := asAlice.CreateGroupWithResponse(ctx, shelfclient.NewGroup{Name: name("team")})
	if err != nil || group.JSON201 == nil {
		t.Fatalf("group: %v %s", err, group.Body)
	}
	g := group.JSON201.Id
	if r, err := asAlice.SetGroupMemberWithResponse(ctx, g, bob.Id, shelfclient.GroupRoleRequest{Role: shelfclient.GroupRoleMember}); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("add bob: %v %s", err, r.Body)
	}
	if r, err := asAlice.ShareContentWithResponse(ctx, secret.JSON201.Id, g, shelfclient.ContentRoleRequest{Role: shelfclient.ContentRoleViewer}); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("share: %v %s", err, r.Body)
	}

	// Libraries as different viewers.
	lib, err := anon.GetUserLibraryWithResponse(ctx, alice.Id, nil)
	if err != nil || lib.JSON200 == nil || len(lib.JSON200.Items) != 1 || lib.JSON200.Items[0].Id != public.JSON201.Id {
		t.Fatalf("anonymous view of alice's library: %v %s", err, lib.Body)
	}
	own, err := asAlice.GetUserLibraryWithResponse(ctx, alice.Id, nil)
	if err != nil || own.JSON200 == nil || len(own.JSON200.Items) != 2 {
		t.Fatalf("alice's own library: %v %s", err, own.Body)
	}
	oldest := shelfclient.LibraryOrderOldest
	asc, err := asAlice.GetUserLibraryWithResponse(ctx, alice.Id, &shelfclient.GetUserLibraryParams{Order: &oldest})
	if err != nil || asc.JSON200 == nil || len(asc.JSON200.Items) != 2 || asc.JSON200.Items[0].Id != own.JSON200.Items[1].Id {
		t.Fatalf("alice's own library, oldest first: %v %s (newest first: %s)", err, asc.Body, own.Body)
	}
	glib, err := asBob.GetGroupLibraryWithResponse(ctx, g, nil)
	if err != nil || glib.JSON200 == nil || len(glib.JSON200.Items) != 1 || glib.JSON200.Items[0].Id != secret.JSON201.Id {
		t.Fatalf("bob reading the group's library: %v %s", err, glib.Body)
	}

	// Moderation.
	s, err := asCarol.SuspendUserWithResponse(ctx, bob.Id, shelfclient.SuspensionRequest{Reason: "spam"})
	if err != nil || s.JSON201 == nil {
		t.Fatalf("suspend: %v %s", err, s.Body)
	}
	if r, err := asBob.GetMeWithResponse(ctx); err != nil || r.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("bob's session after suspension: %v %d", err, r.StatusCode())
	}
	list, err := asCarol.ListSuspensionsWithResponse(ctx, nil)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Items) != 1 || list.JSON200.Items[0].UserId != bob.Id {
		t.Fatalf("suspended list: %v %s", err, list.Body)
	}
	found, err := asCarol.SearchUsersWithResponse(ctx, &shelfclient.SearchUsersParams{Q: strings.ToUpper(bobName + "@example.org")})
	if err != nil || found.JSON200 == nil || len(found.JSON200.Items) != 1 || found.JSON200.Items[0].Id != bob.Id ||
		found.JSON200.Items[0].Status == nil || *found.JSON200.Items[0].Status != shelfclient.UserStatusSuspended {
		t.Fatalf("search for bob: %v %s", err, found.Body)
	}
	if r, err := asCarol.UnsuspendUserWithResponse(ctx, bob.Id); err != nil || r.StatusCode() != http.StatusNoContent {
		t.Fatalf("unsuspend: %v %d", err, r.StatusCode())
	}
	login(bobName)

	// Alice's sessions: she ends another of hers by its id; an admin ends
	// every one of them.
	asAlice2 := login(aliceName)
	mine, err := asAlice.ListUserSessionsWithResponse(ctx, alice.Id, nil)
	if err != nil || mine.JSON200 == nil || len(mine.JSON200.Items) != 2 || !mine.JSON200.Items[1].Current || mine.JSON200.Items[0].Current {
		t.Fatalf("alice's sessions: %v %s", err, mine.Body)
	}
	if r, err := asAlice.RevokeUserSessionWithResponse(ctx, alice.Id, mine.JSON200.Items[0].Id); err != nil || r.StatusCode() != http.StatusNoContent {
		t.Fatalf("alice revokes her other session: %v %s", err, r.Body)
	}
	if r, err := asAlice2.GetMeWithResponse(ctx); err != nil || r.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("alice's revoked session: %v %d", err, r.StatusCode())
	}
	keep := shelfclient.SessionKeepCurrent
	if r, err := asCarol.RevokeUserSessionsWithResponse(ctx, alice.Id, &shelfclient.RevokeUserSessionsParams{Keep: &keep}); err != nil || r.StatusCode() != http.StatusNoContent {
		t.Fatalf("an admin ends alice's sessions: %v %s", err, r.Body)
	}
	if r, err := asAlice.GetMeWithResponse(ctx); err != nil || r.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("alice's session after an admin ended them all: %v %d", err, r.StatusCode())
	}

	// Bob proves his address (a factor takes a verified one) with the
	// link mailed at signup, then adds an authenticator: from then on his
	// password answers a challenge (202), and a code makes the session.
	token := testkit.TokenIn(t, mail.WaitFor(t, bobName+"@example.org", 1)[0].Text, "verify")
	if r, err := anon.ConfirmEmailVerificationWithResponse(ctx, shelfclient.EmailConfirmation{Token: token}); err != nil || r.StatusCode() != http.StatusNoContent {
		t.Fatalf("bob verifies his address: %v %s", err, r.Body)
	}
	asBob = login(bobName)
	enrol, err := asBob.EnrolTotpWithResponse(ctx, bob.Id, shelfclient.TotpEnrolmentRequest{CurrentPassword: testPassword})
	if err != nil || enrol.JSON201 == nil {
		t.Fatalf("bob enrols an authenticator: %v %s", err, enrol.Body)
	}
	app := &authenticatorApp{secret: enrol.JSON201.Secret}
	confirmed, err := asBob.ConfirmTotpWithResponse(ctx, bob.Id, enrol.JSON201.Factor.Id, shelfclient.TotpCode{Code: app.code(t)})
	if err != nil || confirmed.JSON200 == nil || confirmed.JSON200.RecoveryCodes == nil || len(*confirmed.JSON200.RecoveryCodes) != 10 {
		t.Fatalf("bob confirms it: %v %s", err, confirmed.Body)
	}
	challenged, err := anon.CreateSessionWithResponse(ctx, shelfclient.Login{Login: bobName, Password: testPassword})
	if err != nil || challenged.JSON202 == nil || challenged.JSON201 != nil {
		t.Fatalf("bob's password alone: %v %s, want 202", err, challenged.Body)
	}
	code := app.code(t)
	second, err := anon.CompleteSecondFactorWithResponse(ctx, shelfclient.SecondFactor{Challenge: challenged.JSON202.Challenge, Code: &code})
	if err != nil || second.JSON201 == nil {
		t.Fatalf("bob's code: %v %s", err, second.Body)
	}
	asBob = sdk(t, servers, second.JSON201.Token)

	// Bob adds a passkey too (a recovery code proves him: his app's codes
	// of this half minute are spent), and logs in with it: the 202 offers
	// it, and the key's answer makes the session.
	key := softkey.New(passkeyOrigin)
	recovery := (*confirmed.JSON200.RecoveryCodes)[0]
	begun, err := asBob.BeginPasskeyWithResponse(ctx, bob.Id, shelfclient.PasskeyEnrolmentRequest{CurrentPassword: testPassword, RecoveryCode: &recovery})
	if err != nil || begun.JSON201 == nil {
		t.Fatalf("bob begins a passkey: %v %s", err, begun.Body)
	}
	created, err := key.Create(mustJSON(t, begun.JSON201.Options))
	if err != nil {
		t.Fatal(err)
	}
	registered, err := asBob.FinishPasskeyWithResponse(ctx, bob.Id, begun.JSON201.Factor.Id,
		shelfclient.PasskeyRegistration{Credential: asCredential(t, created)})
	if err != nil || registered.JSON200 == nil || registered.JSON200.Factor.Kind != shelfclient.FactorKindPasskey {
		t.Fatalf("bob registers it: %v %s", err, registered.Body)
	}
	challenged, err = anon.CreateSessionWithResponse(ctx, shelfclient.Login{Login: bobName, Password: testPassword})
	if err != nil || challenged.JSON202 == nil || challenged.JSON202.Passkey == nil {
		t.Fatalf("bob's password with a passkey: %v %s, want 202 with its options", err, challenged.Body)
	}
	signed, err := key.Get(mustJSON(t, *challenged.JSON202.Passkey))
	if err != nil {
		t.Fatal(err)
	}
	credential := asCredential(t, signed)
	second, err = anon.CompleteSecondFactorWithResponse(ctx, shelfclient.SecondFactor{Challenge: challenged.JSON202.Challenge, Passkey: &credential})
	if err != nil || second.JSON201 == nil {
		t.Fatalf("bob's passkey: %v %s", err, second.Body)
	}
	asBob = sdk(t, servers, second.JSON201.Token)

	// Bob deletes his account (his code too, now): it is gone for
	// everyone, and his name is free for a new signup.
	current := testPassword
	code = app.code(t)
	deletion, err := asBob.RequestUserDeletionWithResponse(ctx, bob.Id, shelfclient.UserDeletion{CurrentPassword: &current, Code: &code})
	if err != nil || deletion.StatusCode() != http.StatusAccepted || deletion.JSON202 == nil {
		t.Fatalf("bob deletes his account: %v %s", err, deletion.Body)
	}
	if r, err := anon.GetUserWithResponse(ctx, bob.Id); err != nil || r.StatusCode() != http.StatusNotFound {
		t.Fatalf("bob's deleted account: %v %d", err, r.StatusCode())
	}
	// The rest is the job's, on a worker of either instance: followed
	// without a session until it reads finished.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r, err := anon.GetJobWithResponse(ctx, deletion.JSON202.Id)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("bob's deletion job: %v %s", err, r.Body)
		}
		if r.JSON200.State == shelfclient.JobStateFinished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's deletion job after 60 s: %s", r.Body)
		}
	}
	if again := signup(bobName); again.Id == bob.Id {
		t.Fatal("a deleted id was given again")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// asCredential is a key's answer as the SDK's PublicKeyCredentialJson.
func asCredential(t *testing.T, answer []byte) shelfclient.PublicKeyCredentialJson {
	t.Helper()
	var c shelfclient.PublicKeyCredentialJson
	if err := json.Unmarshal(answer, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
