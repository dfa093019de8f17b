package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Addr != ":8080" || c.Cassandra.Keyspace != "shelf" || c.Cassandra.Hosts[0] != "127.0.0.1" ||
		c.Cassandra.Consistency != "LOCAL_QUORUM" || c.Cassandra.SerialConsistency != "SERIAL" || c.Cassandra.LocalDC != "" ||
		c.HTTP.MaxBodyBytes != 1<<20 || !c.MigrateOnStart || c.Log.Format != "json" ||
		c.Cassandra.Timeout != 2*time.Second || c.Cassandra.Retries != 2 || c.Cassandra.SpeculativeCopies != 1 || c.HTTP.PprofAddr != "" || c.Log.FlushInterval != 100*time.Millisecond {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	if got := c.Cassandra.Replication.CQL(); got != "{'class': 'SimpleStrategy', 'replication_factor': 1}" {
		t.Fatalf("replication %s", got)
	}
}

func TestValues(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{
		"SHELF_CASSANDRA_HOSTS":    "10.0.0.1, 10.0.0.2:9043",
		"SHELF_REPLICATION":        "NetworkTopologyStrategy:dc1=3,dc2=2",
		"SHELF_CONSISTENCY":        "quorum",
		"SHELF_TRUSTED_PROXIES":    "10.0.0.0/8, 192.168.1.1",
		"SHELF_CASSANDRA_PASSWORD": "s3cret",
		"SHELF_LOG_FORMAT":         "console",
		"SHELF_LOG_FLUSH_INTERVAL": "0s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cassandra.Hosts) != 2 || c.Cassandra.Hosts[1] != "10.0.0.2:9043" {
		t.Fatalf("hosts %v", c.Cassandra.Hosts)
	}
	if got := c.Cassandra.Replication.CQL(); got != "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 2}" {
		t.Fatalf("replication %s", got)
	}
	if c.Log.FlushInterval != 0 {
		t.Fatalf("log flush interval %v, want 0 (each line at once)", c.Log.FlushInterval)
	}
	if c.Cassandra.Consistency != "QUORUM" || len(c.HTTP.TrustedProxies) != 2 || c.HTTP.TrustedProxies[1].String() != "192.168.1.1/32" {
		t.Fatalf("parsed %+v", c)
	}
	if f := c.Fields(); f["SHELF_CASSANDRA_PASSWORD"] != "***" || strings.Contains(strings.Join(values(f), " "), "s3cret") {
		t.Fatalf("password not masked: %v", f)
	}
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestBadValuesNameTheirVariable(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"SHELF_HTTP_READ_TIMEOUT":  "soon",
		"SHELF_REPLICATION":        "SimpleStrategy:zero",
		"SHELF_CONSISTENCY":        "MOST",
		"SHELF_SERIAL_CONSISTENCY": "QUORUM",
		"SHELF_KEYSPACE":           "Bad-Name",
		"SHELF_LOG_FORMAT":         "xml",
		"SHELF_MAX_BODY_BYTES":     "-1",
		"SHELF_MIGRATE_ON_START":   "maybe",
		"SHELF_TRUSTED_PROXIES":    "10.0.0.0/99",
		"SHELF_CASSANDRA_HOSTS":    " , ",
		"SHELF_PPROF_ADDR":         "6060",
		"SHELF_LOG_FLUSH_INTERVAL": "-1s",
		"SHELF_HIBP_URL":           "api.pwnedpasswords.com",
		"SHELF_HIBP_FAIL":          "maybe",
		"SHELF_HIBP_TIMEOUT":       "0s",
		"SHELF_THROTTLE_PER_LOGIN": "513",
		"SHELF_MAIL_PER_HOUR":      "600",
	}
	_, err := Load(env(bad))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for name := range bad {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}

// TestPprofAddr: profiling is off unless SHELF_PPROF_ADDR is set, and an
// address that cannot be listened on is refused at start, not at the first
// profile.
func TestPprofAddr(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"127.0.0.1:6060", "localhost:6060", "[::1]:6060", ":6060", "127.0.0.1:0", " 127.0.0.1:6060 "} {
		c, err := Load(env(map[string]string{"SHELF_PPROF_ADDR": good}))
		if err != nil || c.HTTP.PprofAddr != strings.TrimSpace(good) {
			t.Errorf("%q: %q, %v", good, c.HTTP.PprofAddr, err)
		}
	}
	for _, bad := range []string{"6060", "127.0.0.1", "127.0.0.1:pprof", "127.0.0.1:70000", "::1:6060", "http://127.0.0.1:6060"} {
		_, err := Load(env(map[string]string{"SHELF_PPROF_ADDR": bad}))
		if err == nil || !strings.Contains(err.Error(), "SHELF_PPROF_ADDR: ") || !strings.Contains(err.Error(), "host:port") {
			t.Errorf("%q accepted or not explained: %v", bad, err)
		}
	}
	_, err := Load(env(map[string]string{"SHELF_HTTP_ADDR": "127.0.0.1:8080", "SHELF_PPROF_ADDR": "127.0.0.1:8080"}))
	if err == nil || !strings.Contains(err.Error(), "SHELF_PPROF_ADDR: ") || !strings.Contains(err.Error(), "SHELF_HTTP_ADDR") {
		t.Errorf("pprof on the API's address: %v", err)
	}
}

// TestReferenceIsCurrent keeps docs/configuration.md true: it is what
// Reference renders from Vars, every variable has a row in the table of its
// role, and none lacks a meaning. make generate rewrites the file.
func TestReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	committed, err := os.ReadFile("../../" + ReferencePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, Reference()) {
		t.Errorf("%s is stale: run make generate", ReferencePath)
	}
	titled := map[Role]bool{}
	for _, r := range roleTitles {
		titled[r.role] = true
	}
	for _, v := range Vars {
		if !titled[v.Role] || strings.TrimSpace(v.Help) == "" {
			t.Errorf("%s: role %d, meaning %q: the reference cannot place or explain it", v.Name, v.Role, v.Help)
		}
		if row := "| `" + v.Name + "` |"; !strings.Contains(string(committed), row) {
			t.Errorf("%s has no table row for %s", ReferencePath, v.Name)
		}
	}
}

// TestComposeSettingsLoad: every service of docker-compose.yml that runs
// the api binary is configured with variables shelf knows, and values it
// accepts.
func TestComposeSettingsLoad(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Build       any               `yaml:"build"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, v := range Vars {
		known[v.Name] = true
	}
	apis := 0
	for name, svc := range compose.Services {
		if svc.Build == nil {
			continue // not the api image
		}
		apis++
		for k := range svc.Environment {
			if !known[k] {
				t.Errorf("%s sets %s, which shelf does not read", name, k)
			}
		}
		if _, err := Load(env(svc.Environment)); err != nil {
			t.Errorf("%s's settings: %v", name, err)
		}
	}
	if apis < 2 {
		t.Errorf("%d services build the api; want the migration and the replicas", apis)
	}
}

// TestAttemptsFitTheRequest: an idempotent statement's attempts (the first
// and its retries, each up to SHELF_CASSANDRA_TIMEOUT) must fit in the
// request's deadline, and a copy must be able to go out before the first
// attempt times out.
func TestAttemptsFitTheRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"SHELF_CASSANDRA_TIMEOUT": "4s"}, "SHELF_CASSANDRA_TIMEOUT: "},
		{map[string]string{"SHELF_CASSANDRA_RETRIES": "4"}, "SHELF_CASSANDRA_TIMEOUT: "},
		{map[string]string{"SHELF_CASSANDRA_SPECULATIVE_DELAY": "2s"}, "SHELF_CASSANDRA_SPECULATIVE_DELAY: "},
		// (1 + retries) × 2s overflows time.Duration: it wrapped below
		// SHELF_REQUEST_TIMEOUT and was accepted.
		{map[string]string{"SHELF_CASSANDRA_RETRIES": "9223372036854775807"}, "SHELF_CASSANDRA_TIMEOUT: "},
		{map[string]string{"SHELF_CASSANDRA_RETRIES": "9300000000"}, "SHELF_CASSANDRA_TIMEOUT: "},
	} {
		if _, err := Load(env(tc.env)); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%v accepted or not explained: %v", tc.env, err)
		}
	}
	for _, ok := range []map[string]string{
		{"SHELF_CASSANDRA_TIMEOUT": "3s"},
		{"SHELF_CASSANDRA_RETRIES": "0", "SHELF_CASSANDRA_TIMEOUT": "9s"},
		{"SHELF_CASSANDRA_RETRIES": "3"},
		{"SHELF_CASSANDRA_RETRIES": "1", "SHELF_CASSANDRA_TIMEOUT": "4999ms"},
		{"SHELF_CASSANDRA_SPECULATIVE_COPIES": "0", "SHELF_CASSANDRA_SPECULATIVE_DELAY": "5s"},
	} {
		if _, err := Load(env(ok)); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
}

// TestMetricsAddr: /metrics stays on the API's address unless
// SHELF_METRICS_ADDR names one of its own, which may be neither the API's
// nor pprof's (port 0 is a free port each time, never a clash).
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	if c, err := Load(env(nil)); err != nil || c.HTTP.MetricsAddr != "" {
		t.Fatalf("default: %q, %v", c.HTTP.MetricsAddr, err)
	}
	if c, err := Load(env(map[string]string{"SHELF_METRICS_ADDR": "10.0.0.5:9090"})); err != nil || c.HTTP.MetricsAddr != "10.0.0.5:9090" {
		t.Errorf("set: %q, %v", c.HTTP.MetricsAddr, err)
	}
	if _, err := Load(env(map[string]string{"SHELF_METRICS_ADDR": "9090"})); err == nil || !strings.Contains(err.Error(), "SHELF_METRICS_ADDR: ") {
		t.Errorf("a bare port accepted: %v", err)
	}
	for _, clash := range []map[string]string{
		{"SHELF_HTTP_ADDR": "127.0.0.1:8080", "SHELF_METRICS_ADDR": "127.0.0.1:8080"},
		{"SHELF_PPROF_ADDR": "127.0.0.1:6060", "SHELF_METRICS_ADDR": "127.0.0.1:6060"},
	} {
		if _, err := Load(env(clash)); err == nil || !strings.Contains(err.Error(), "SHELF_METRICS_ADDR: ") {
			t.Errorf("%v: %v", clash, err)
		}
	}
	if _, err := Load(env(map[string]string{"SHELF_HTTP_ADDR": "127.0.0.1:0", "SHELF_PPROF_ADDR": "127.0.0.1:0", "SHELF_METRICS_ADDR": "127.0.0.1:0"})); err != nil {
		t.Errorf("three free ports: %v", err)
	}
}

// TestLogMailerOnlyInDevelopment (docs/design/tokens.md): the log mailer,
// the default, is refused where the mailed links lead to another machine
// (a production that forgot SHELF_MAILER would log every reset link),
// unless SHELF_ALLOW_LOG_MAILER says so; on this machine it stays.
func TestLogMailerOnlyInDevelopment(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"", "http://localhost:8080", "http://127.0.0.1:18090", "http://[::1]:8080", "http://shelf.localhost", "HTTP://LOCALHOST"} {
		if c, err := Load(env(map[string]string{"SHELF_PUBLIC_URL": url})); err != nil || c.Mail.Mailer != "log" {
			t.Errorf("%q: the log mailer refused in development: %v", url, err)
		}
	}
	for _, url := range []string{"https://shelf.example.org", "http://10.0.0.5:8080", "http://localhost.example.org", "http://[::ffff:10.0.0.5]"} {
		_, err := Load(env(map[string]string{"SHELF_PUBLIC_URL": url}))
		if err == nil || !strings.Contains(err.Error(), "SHELF_MAILER: ") || !strings.Contains(err.Error(), "SHELF_ALLOW_LOG_MAILER") {
			t.Errorf("%q: the log mailer by default: %v", url, err)
		}
		if _, err := Load(env(map[string]string{"SHELF_PUBLIC_URL": url, "SHELF_MAILER": "log"})); err == nil {
			t.Errorf("%q: SHELF_MAILER=log alone is allowed", url)
		}
		if c, err := Load(env(map[string]string{"SHELF_PUBLIC_URL": url, "SHELF_ALLOW_LOG_MAILER": "true"})); err != nil || !c.Mail.AllowLogMailer {
			t.Errorf("%q: allowed explicitly, still refused: %v", url, err)
		}
		// SMTP mails there over https only (TestMailedLinksTravelOnlyEncrypted).
		secure := strings.Replace(url, "http://", "https://", 1)
		if _, err := Load(env(map[string]string{"SHELF_PUBLIC_URL": secure, "SHELF_MAILER": "smtp", "SHELF_SMTP_HOST": "mail.example.org"})); err != nil {
			t.Errorf("%q with smtp: %v", secure, err)
		}
	}
}

// TestHIBP: the breach check is off by default and fails open; set, it
// keeps its URL without the trailing slash.
func TestHIBP(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil || c.Accounts.HIBPURL != "" || c.Accounts.HIBPFailClosed || c.Accounts.HIBPTimeout != 2*time.Second {
		t.Fatalf("defaults: %+v, %v", c.Accounts, err)
	}
	c, err = Load(env(map[string]string{"SHELF_HIBP_URL": "https://api.pwnedpasswords.com/", "SHELF_HIBP_FAIL": "closed", "SHELF_HIBP_TIMEOUT": "500ms"}))
	if err != nil || c.Accounts.HIBPURL != "https://api.pwnedpasswords.com" || !c.Accounts.HIBPFailClosed || c.Accounts.HIBPTimeout != 500*time.Millisecond {
		t.Fatalf("set: %+v, %v", c.Accounts, err)
	}
	if f := c.Fields(); f["SHELF_HIBP_URL"] != "https://api.pwnedpasswords.com" || f["SHELF_HIBP_FAIL"] != "closed" {
		t.Fatalf("logged as %v", f)
	}
}

// TestTTLsCassandraKeeps: a setting that becomes a row's TTL (a session,
// a mailed link, a claim's lease) longer than Cassandra keeps a row (20
// years) is refused at start, naming it. Accepted, as it was, every login
// (or link mailed, or signup) wrote a TTL Cassandra refuses and answered
// 500: an operator who set SHELF_SESSION_TTL=876000h for sessions that
// never end had no login left.
func TestTTLsCassandraKeeps(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"SHELF_SESSION_TTL", "SHELF_CLAIM_LEASE", "SHELF_VERIFY_EMAIL_TTL", "SHELF_RESET_PASSWORD_TTL", "SHELF_REVERT_EMAIL_TTL"} {
		if _, err := Load(env(map[string]string{name: "876000h"})); err == nil || !strings.Contains(err.Error(), name+": ") {
			t.Errorf("%s of 100 years accepted or not explained: %v", name, err)
		}
		if _, err := Load(env(map[string]string{name: "87600h"})); err != nil {
			t.Errorf("%s of 10 years refused: %v", name, err)
		}
	}
}

// TestTrustingEveryAddressIsRefused: SHELF_TRUSTED_PROXIES=0.0.0.0/0 (or
// ::/0), what an operator writes to have the load balancer's
// X-Forwarded-For believed, makes every hop of the header trusted, so
// clientIP passes over each and answers the connection's peer: every
// client is the proxy's address, one per-address budget for all (five
// failed passwords from a stranger hold the owner's login off for the
// window, one client's requests spend everyone's rate limit). It was
// accepted silently; it is refused, naming the setting.
func TestTrustingEveryAddressIsRefused(t *testing.T) {
	t.Parallel()
	for _, all := range []string{"0.0.0.0/0", "10.0.0.0/8, ::/0"} {
		if _, err := Load(env(map[string]string{"SHELF_TRUSTED_PROXIES": all})); err == nil || !strings.Contains(err.Error(), "SHELF_TRUSTED_PROXIES: ") {
			t.Errorf("%q accepted or not explained: %v", all, err)
		}
	}
	if c, err := Load(env(map[string]string{"SHELF_TRUSTED_PROXIES": "10.0.0.0/8, fd00::/8"})); err != nil || len(c.HTTP.TrustedProxies) != 2 {
		t.Errorf("the proxies' networks: %v, %v", c.HTTP.TrustedProxies, err)
	}
}

// TestArgon2ParametersFitTheHasher: the hasher takes memory and rounds as
// 32-bit numbers. SHELF_ARGON2_MEMORY_KIB=4294967296 was accepted and
// wrapped to 0, which argon2 raises to its least (8 KiB): every new
// password hashed with almost no memory, silently, a GPU's easy prey;
// SHELF_ARGON2_TIME=4294967296 wrapped to 0 rounds, on which argon2
// panics at every signup and login. Both are refused, naming the setting.
func TestArgon2ParametersFitTheHasher(t *testing.T) {
	t.Parallel()
	for name, value := range map[string]string{"SHELF_ARGON2_MEMORY_KIB": "4294967296", "SHELF_ARGON2_TIME": "4294967296"} {
		if _, err := Load(env(map[string]string{name: value})); err == nil || !strings.Contains(err.Error(), name+": ") {
			t.Errorf("%s=%s accepted or not explained: %v", name, value, err)
		}
	}
	if c, err := Load(env(map[string]string{"SHELF_ARGON2_MEMORY_KIB": "4294967295", "SHELF_ARGON2_TIME": "3"})); err != nil || c.Accounts.Argon2MemoryKiB != 4294967295 {
		t.Errorf("the largest memory refused: %v", err)
	}
}

// TestCORSOriginsAreOrigins: a browser's Origin header is a scheme and a
// host, never a path, so SHELF_CORS_ORIGINS=https://app.example.org/ (as
// copied from the address bar) or app.example.org matched no request:
// accepted silently, the console on that origin could not call the API
// while the start-up log showed the setting. Such a value is refused,
// naming the setting; origins, wildcards and * still load.
func TestCORSOriginsAreOrigins(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"https://app.example.org/", "app.example.org", "https://app.example.org/console", "ftp://app.example.org", "https://app.example.org?x=1", "https://*.*.example.org"} {
		if _, err := Load(env(map[string]string{"SHELF_CORS_ORIGINS": bad})); err == nil || !strings.Contains(err.Error(), "SHELF_CORS_ORIGINS: ") {
			t.Errorf("%q accepted or not explained: %v", bad, err)
		}
	}
	c, err := Load(env(map[string]string{"SHELF_CORS_ORIGINS": "https://app.example.org, http://localhost:5173, https://*.example.net, *"}))
	if err != nil || len(c.HTTP.CORSOrigins) != 4 {
		t.Errorf("origins: %v, %v", c.HTTP.CORSOrigins, err)
	}
}

// TestReplicationNamesEachDataCentreOnce: SHELF_REPLICATION with a data
// centre twice (NetworkTopologyStrategy:dc1=3,dc2=3,dc1=1, a line edited
// in place of replaced) created the keyspace with the last count, one
// replica in dc1, silently: LOCAL_QUORUM there is that one node, and its
// loss loses what only it held. It is refused, naming the setting.
func TestReplicationNamesEachDataCentreOnce(t *testing.T) {
	t.Parallel()
	if _, err := Load(env(map[string]string{"SHELF_REPLICATION": "NetworkTopologyStrategy:dc1=3,dc2=3,dc1=1"})); err == nil || !strings.Contains(err.Error(), "SHELF_REPLICATION: ") {
		t.Errorf("a data centre named twice accepted or not explained: %v", err)
	}
}

// TestOneAddressCannotFillALoginsBudget: the login's tier must need more
// than one address to fill. With SHELF_THROTTLE_PER_LOGIN at or below
// SHELF_THROTTLE_PER_ADDRESS, or the address tier off beside it, one
// stranger's address locks the owner out for every window it keeps
// failing (a defence an attacker turns against the owner), so such a
// pair is refused at start, naming SHELF_THROTTLE_PER_LOGIN; either tier
// off alone, or both, is the operator's to choose.
func TestOneAddressCannotFillALoginsBudget(t *testing.T) {
	t.Parallel()
	for _, bad := range [][2]string{{"5", "5"}, {"12", "5"}, {"0", "50"}} {
		_, err := Load(env(map[string]string{"SHELF_THROTTLE_PER_ADDRESS": bad[0], "SHELF_THROTTLE_PER_LOGIN": bad[1]}))
		if err == nil || !strings.Contains(err.Error(), "SHELF_THROTTLE_PER_LOGIN: ") {
			t.Errorf("per address %s, per login %s: accepted or not named: %v", bad[0], bad[1], err)
		}
	}
	for _, good := range [][2]string{{"5", "50"}, {"5", "6"}, {"5", "0"}, {"0", "0"}, {"256", "512"}} {
		if _, err := Load(env(map[string]string{"SHELF_THROTTLE_PER_ADDRESS": good[0], "SHELF_THROTTLE_PER_LOGIN": good[1]})); err != nil {
			t.Errorf("per address %s, per login %s: %v", good[0], good[1], err)
		}
	}
}

// TestRequestEndsBeforeItsAnswerMayNoLongerBeWritten: a request that runs
// out of SHELF_REQUEST_TIMEOUT answers 503 timeout, but net/http closes
// the connection once SHELF_HTTP_WRITE_TIMEOUT has passed since the
// request was read. With the request's deadline at or past it, a request
// that runs out is answered by a closed connection, never its 503 (which
// says when to retry); such a pair was accepted. It is refused at start,
// naming both settings.
func TestRequestEndsBeforeItsAnswerMayNoLongerBeWritten(t *testing.T) {
	t.Parallel()
	for _, bad := range [][2]string{{"30s", "30s"}, {"31s", "30s"}, {"10s", "5s"}} {
		_, err := Load(env(map[string]string{"SHELF_REQUEST_TIMEOUT": bad[0], "SHELF_HTTP_WRITE_TIMEOUT": bad[1]}))
		if err == nil || !strings.Contains(err.Error(), "SHELF_REQUEST_TIMEOUT: ") || !strings.Contains(err.Error(), "SHELF_HTTP_WRITE_TIMEOUT") {
			t.Errorf("request %s, write %s: accepted or not named: %v", bad[0], bad[1], err)
		}
	}
	for _, good := range [][2]string{{"29s", "30s"}, {"30s", "31s"}, {"10s", "30s"}} {
		if _, err := Load(env(map[string]string{"SHELF_REQUEST_TIMEOUT": good[0], "SHELF_HTTP_WRITE_TIMEOUT": good[1]})); err != nil {
			t.Errorf("request %s, write %s: %v", good[0], good[1], err)
		}
	}
}

// TestMailedLinksTravelOnlyEncrypted: SHELF_PUBLIC_URL is the base of
// every mailed link, each carrying a token that verifies an address,
// resets a password or reverts a change. With SMTP (mail that leaves
// this machine) and a plain-http URL on another host, whoever sees the
// traffic of one click holds the token: such a pair was accepted. It is
// refused at start, naming SHELF_PUBLIC_URL; http stays for this machine
// (localhost, 127.0.0.0/8, ::1), where nothing crosses a network.
func TestMailedLinksTravelOnlyEncrypted(t *testing.T) {
	t.Parallel()
	smtp := func(publicURL string) map[string]string {
		return map[string]string{"SHELF_MAILER": "smtp", "SHELF_SMTP_HOST": "mail.example.org", "SHELF_PUBLIC_URL": publicURL}
	}
	for _, bad := range []string{"http://shelf.example.org", "HTTP://shelf.example.org:8080", "http://192.0.2.7", "http://[2001:db8::1]:8080"} {
		if _, err := Load(env(smtp(bad))); err == nil || !strings.Contains(err.Error(), "SHELF_PUBLIC_URL: ") || !strings.Contains(err.Error(), "https://") {
			t.Errorf("SMTP with %s: accepted or not explained: %v", bad, err)
		}
	}
	for _, good := range []string{"https://shelf.example.org", "http://localhost:8080", "http://127.0.0.2:8080", "http://[::1]:8080"} {
		if _, err := Load(env(smtp(good))); err != nil {
			t.Errorf("SMTP with %s: %v", good, err)
		}
	}
}

// TestAMailLimitOfOneIsRefused: verification links take all but the last
// mail of an address's hour, so that the last is always one that
// recovers the account. Under SHELF_MAIL_PER_HOUR=1 there is no last: a
// stranger's request for a verification link (anyone may ask, and it
// opens nothing) took the hour's only mail, and the owner's reset link
// asked after it was held back. The limit is refused at start, naming
// the setting; 0 (off) and 2 are taken.
func TestAMailLimitOfOneIsRefused(t *testing.T) {
	t.Parallel()
	_, err := Load(env(map[string]string{"SHELF_MAIL_PER_HOUR": "1"}))
	if err == nil || !strings.Contains(err.Error(), "SHELF_MAIL_PER_HOUR: ") {
		t.Errorf("a mail limit of one: accepted or not explained: %v", err)
	}
	for _, good := range []string{"0", "2"} {
		if _, err := Load(env(map[string]string{"SHELF_MAIL_PER_HOUR": good})); err != nil {
			t.Errorf("a mail limit of %s: %v", good, err)
		}
	}
}

// TestAResetLinkOutlivesTheHourItsMailCounts: a mail counts against its
// address's budget for an hour (SHELF_MAIL_PER_HOUR), and what keeps a
// stranger who spends the hour on an address's resets from holding the
// owner's own request back is that his links reach her and work. With
// SHELF_RESET_PASSWORD_TTL below the hour, five resets asked at the top
// of each hour left her, from the links' end to the hour's, with no
// working link and every request of hers held back (and a thief with
// the password did the same with his changes' notices): such a pair was
// accepted. It is refused at start, naming SHELF_RESET_PASSWORD_TTL;
// with the limit off, a short link is the operator's to choose.
func TestAResetLinkOutlivesTheHourItsMailCounts(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"15m", "59m59s"} {
		_, err := Load(env(map[string]string{"SHELF_RESET_PASSWORD_TTL": bad}))
		if err == nil || !strings.Contains(err.Error(), "SHELF_RESET_PASSWORD_TTL: ") || !strings.Contains(err.Error(), "SHELF_MAIL_PER_HOUR") {
			t.Errorf("a reset link of %s beside an hourly mail limit: accepted or not explained: %v", bad, err)
		}
	}
	for _, good := range []map[string]string{
		{"SHELF_RESET_PASSWORD_TTL": "1h"},
		{"SHELF_RESET_PASSWORD_TTL": "2h"},
		{"SHELF_RESET_PASSWORD_TTL": "15m", "SHELF_MAIL_PER_HOUR": "0"},
	} {
		if _, err := Load(env(good)); err != nil {
			t.Errorf("%v: %v", good, err)
		}
	}
}

// TestAVerificationLinkOutlivesTheHourItsMailCounts: under
// SHELF_REQUIRE_VERIFIED_EMAIL the owner of an address not verified has
// no session to ask for a verification link with, so her request spends
// anyone's budget, whose verification share (all but the hour's last
// mail) a stranger spends with four requests at the top of each hour.
// His links reach her, and are what keeps her in while her own request is
// held back: with SHELF_VERIFY_EMAIL_TTL below the hour they died first,
// and from then to the hour's end the login refused her
// email_not_verified and sent her for a link that was never mailed.
// Such a triple was accepted. It is refused at start, naming
// SHELF_VERIFY_EMAIL_TTL and the other two; without the requirement (she
// logs in and asks with her session, in the account's own budget) or
// with the limit off, a short link is the operator's to choose.
func TestAVerificationLinkOutlivesTheHourItsMailCounts(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"15m", "59m59s"} {
		_, err := Load(env(map[string]string{"SHELF_VERIFY_EMAIL_TTL": bad, "SHELF_REQUIRE_VERIFIED_EMAIL": "true"}))
		if err == nil || !strings.Contains(err.Error(), "SHELF_VERIFY_EMAIL_TTL: ") ||
			!strings.Contains(err.Error(), "SHELF_MAIL_PER_HOUR") || !strings.Contains(err.Error(), "SHELF_REQUIRE_VERIFIED_EMAIL") {
			t.Errorf("a verification link of %s beside an hourly mail limit and required verification: accepted or not explained: %v", bad, err)
		}
	}
	for _, good := range []map[string]string{
		{"SHELF_VERIFY_EMAIL_TTL": "1h", "SHELF_REQUIRE_VERIFIED_EMAIL": "true"},
		{"SHELF_VERIFY_EMAIL_TTL": "15m"},
		{"SHELF_VERIFY_EMAIL_TTL": "15m", "SHELF_REQUIRE_VERIFIED_EMAIL": "true", "SHELF_MAIL_PER_HOUR": "0"},
	} {
		if _, err := Load(env(good)); err != nil {
			t.Errorf("%v: %v", good, err)
		}
	}
}
