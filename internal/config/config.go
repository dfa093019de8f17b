// Package config reads shelf's settings from SHELF_* environment variables:
// one struct, a default for everything, and validation that names the
// variable at fault. The serve, migrate and admin commands share it, so they
// all act on the same data by default.
package config

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"shelf/internal/factor"
)

// Config is every setting of the api binary.
type Config struct {
	HTTP      HTTP
	Cassandra Cassandra
	Log       Log
	// MigrateOnStart makes `serve` apply schema migrations before listening.
	MigrateOnStart bool
	Accounts       Accounts
	Moderation     Moderation
	Content        Content
	Mail           Mail
}

// Mail holds email verification, password reset and how mail is sent.
type Mail struct {
	// Mailer is log (development: mail written to the log, links and all)
	// or smtp.
	Mailer string
	// AllowLogMailer keeps the log mailer where PublicURL is not this
	// machine (LogMailerRefused).
	AllowLogMailer bool
	// PublicURL is the console's address, the base of mailed links.
	PublicURL string
	// From is the sender of every mail.
	From string
	// SMTP server: host, port, credentials (empty user: no AUTH), TLS mode
	// (starttls, tls or none) and the timeout of one mail.
	SMTPHost     string
	SMTPPort     int
	SMTPUsername string
	SMTPPassword string
	SMTPTLS      string
	SMTPTimeout  time.Duration
	// VerifyTTL and ResetTTL are how long mailed tokens may be used.
	VerifyTTL time.Duration
	ResetTTL  time.Duration
	// RevertTTL is how long the revert link of an email change works
	// (and how long the replaced address stays held for it).
	RevertTTL time.Duration
	// RequireVerified refuses login to unverified accounts (admins excepted).
	RequireVerified bool
	// PerHour bounds the mails sent to one address an hour, of every kind
	// together (verifications, resets, notices), counted by every
	// instance together (0: off).
	PerHour int
}

// Content holds the fan-out settings.
type Content struct {
	// SyncFanoutLimit: items with at most this many members are fanned out
	// before a change answers.
	SyncFanoutLimit int
	// LeanMembers: items with at most this many members keep lean library
	// rows (docs/design/libraries.md, "Lean rows").
	LeanMembers int
	// FanoutConcurrency bounds the member libraries written at once.
	FanoutConcurrency int
	// FanoutWorkers is how many items are fanned out in the background at
	// once; FanoutQueue how many may wait.
	FanoutWorkers, FanoutQueue int
	// OutboxInterval is how often the outbox worker looks for unfinished
	// fan-outs; OutboxGrace is how old a mark must be before it does them.
	OutboxInterval time.Duration
	OutboxGrace    time.Duration
	// JobInterval is how often the job worker looks for the deletions,
	// closings and queued jobs (library rebuilds) under way, and for the
	// membership changes a stopped request left (a request that begins a
	// job wakes it at once); JobLease how long a job's lease lasts without
	// a report.
	JobInterval time.Duration
	JobLease    time.Duration
	// JobItemsAtOnce is how many items a job changes at once.
	JobItemsAtOnce int
}

// Moderation holds the suspension settings.
type Moderation struct {
	// BucketSize is month, week or day: the time span of one partition of
	// the suspended list.
	BucketSize string
	// SweepInterval is how often ended suspensions are lifted.
	SweepInterval time.Duration
}

// Accounts holds signup, login and session settings.
type Accounts struct {
	// FactorKeys seal authenticator secrets (SHELF_FACTOR_KEYS, as given:
	// factor.ParseKeys reads it). "": second factors are off, unless
	// PublicURL is this machine (FactorKeysOrDevelopment).
	FactorKeys string
	// RequireAdminFactor: admin powers only from a session made with a
	// second factor.
	RequireAdminFactor bool
	// WebAuthnRPID and WebAuthnOrigins are the passkeys' relying party
	// (RelyingParty: "" derives them from PublicURL).
	WebAuthnRPID    string
	WebAuthnOrigins []string
	// ClaimLease bounds how long a failed signup blocks its names.
	ClaimLease time.Duration
	SessionTTL time.Duration
	// SessionSeenInterval is how stale a session's last-seen time may get
	// before a request of it records a new one (0: every request).
	SessionSeenInterval time.Duration
	// RateLimitPerMinute bounds signups, logins, account changes, mail
	// requests and people searches per client IP, each; 0 is off.
	RateLimitPerMinute int
	// Argon2 parameters of new password hashes.
	Argon2MemoryKiB int
	Argon2Time      int
	Argon2Threads   int
	// HashConcurrency bounds hashes at once; 0 means GOMAXPROCS.
	HashConcurrency int
	// HIBPURL is Have I Been Pwned's Pwned Passwords API (its range
	// route under it), asked about every new password; empty is off.
	HIBPURL string
	// HIBPFailClosed refuses new passwords (503) while that API cannot
	// answer; otherwise they pass on the local checks.
	HIBPFailClosed bool
	// HIBPTimeout bounds one request to it.
	HIBPTimeout time.Duration
	// ThrottlePerAddress bounds failed password checks of one login (a
	// username, an email, an account's current password), and failed
	// second-factor codes, from one client address in ThrottleWindow,
	// counted in Cassandra; 0 is off.
	ThrottlePerAddress int
	// ThrottlePerLogin bounds them from every address together; 0 is off.
	ThrottlePerLogin int
	// ThrottleWindow is how long a failed check counts.
	ThrottleWindow time.Duration
}

// HTTP holds the server's settings.
type HTTP struct {
	Addr              string
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// RequestTimeout bounds the work of one request (its context deadline).
	RequestTimeout time.Duration
	// ShutdownTimeout is how long in-flight requests may drain on SIGTERM.
	ShutdownTimeout time.Duration
	// MaxBodyBytes larger request bodies are refused with 413.
	MaxBodyBytes int64
	// TrustedProxies are the networks whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// CORSOrigins may call the API from browsers.
	CORSOrigins []string
	// PprofAddr, when set, is where net/http/pprof listens, on a server of
	// its own (never the API's router); empty is off.
	PprofAddr string
	// MetricsAddr, when set, is where /metrics is served, on a server of
	// its own, and the API's router has none; empty: on the API's.
	MetricsAddr string
}

// Cassandra holds the connection and consistency settings.
type Cassandra struct {
	Hosts       []string
	Keyspace    string
	Replication Replication
	Consistency string
	// SerialConsistency is the scope of every compare-and-set and SERIAL
	// read: SERIAL (default) or LOCAL_SERIAL, refused on a keyspace in
	// several data centres (CheckReplication).
	SerialConsistency string
	// LocalDC is the data centre this process lives in (empty: routing
	// ignores data centres; refused on a keyspace in several).
	LocalDC  string
	Username string
	Password string
	// Timeout bounds one attempt of a statement (each retry and copy has
	// its own).
	Timeout time.Duration
	// Retries, SpeculativeCopies and SpeculativeDelay: how often an
	// idempotent statement is sent again to the next node after a node
	// could not answer, and how many copies of a slow one go to other
	// nodes after the delay.
	Retries           int
	SpeculativeCopies int
	SpeculativeDelay  time.Duration
	// TimeoutLimit closes a connection once more statements than this
	// timed out on it (0: never).
	TimeoutLimit int
	// SlowLog: an attempt that took at least this long is logged (0: off).
	SlowLog time.Duration
	// SchemaTimeout bounds one schema statement (keyspace, migrations).
	SchemaTimeout  time.Duration
	ConnectTimeout time.Duration
	// ConnectWait is how long start-up keeps retrying an unreachable cluster.
	ConnectWait time.Duration
	// ReconnectInterval is how often a node marked down is tried again.
	ReconnectInterval time.Duration
}

// Log holds the logger's settings.
type Log struct {
	Level  string
	Format string
	// FlushInterval is how long `serve` may hold info lines before writing
	// them out together (0: each line at once).
	FlushInterval time.Duration
}

// Replication is the keyspace's replication: SimpleStrategy with a factor,
// or NetworkTopologyStrategy with a factor per datacenter.
type Replication struct {
	Class   string
	Factor  int
	PerDC   map[string]int
	DCOrder []string
}

// CQL renders the replication map of CREATE KEYSPACE.
func (r Replication) CQL() string {
	if r.Class == "SimpleStrategy" {
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", r.Factor)
	}
	parts := []string{"'class': 'NetworkTopologyStrategy'"}
	for _, dc := range r.DCOrder {
		parts = append(parts, fmt.Sprintf("'%s': %d", dc, r.PerDC[dc]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// String is the form SHELF_REPLICATION takes.
func (r Replication) String() string {
	if r.Class == "SimpleStrategy" {
		return fmt.Sprintf("SimpleStrategy:%d", r.Factor)
	}
	parts := make([]string, len(r.DCOrder))
	for i, dc := range r.DCOrder {
		parts[i] = fmt.Sprintf("%s=%d", dc, r.PerDC[dc])
	}
	return "NetworkTopologyStrategy:" + strings.Join(parts, ",")
}

// Var documents one environment variable. docs/configuration.md is
// generated from this list (make generate), and a test fails when it is
// stale.
type Var struct {
	Name, Default, Help string
	// Role says who sets it: an operator, or someone tuning.
	Role Role
}

// Role sorts the variables for the configuration reference: what an
// operator decides for each deployment, apart from what tunes shelf.
type Role int

const (
	// Operator: a setting of the deployment (addresses, the cluster,
	// credentials, mail, security policy); every operator reads these.
	Operator Role = iota
	// Tuning: a setting whose default is right unless measurements say
	// otherwise (timeouts, limits, worker sizes, intervals).
	Tuning
)

// Vars lists every variable Load reads, with its default.
var Vars = []Var{
	{"SHELF_HTTP_ADDR", ":8080", "address the API listens on", Operator},
	{"SHELF_CASSANDRA_HOSTS", "127.0.0.1", "comma-separated contact points (host or host:port)", Operator},
	{"SHELF_KEYSPACE", "shelf", "keyspace; created if missing", Operator},
	{"SHELF_REPLICATION", "SimpleStrategy:1", "keyspace replication: SimpleStrategy:N or NetworkTopologyStrategy:dc1=3,dc2=3", Operator},
	{"SHELF_CONSISTENCY", "LOCAL_QUORUM", "consistency of reads and writes", Tuning},
	{"SHELF_SERIAL_CONSISTENCY", "SERIAL", "scope of every compare-and-set and SERIAL read: SERIAL (one Paxos over every data centre; in one data centre it costs what LOCAL_SERIAL does) or LOCAL_SERIAL (one per data centre: start-up refuses it when the keyspace is replicated to more than one, where two regions could both win one username)", Tuning},
	{"SHELF_LOCAL_DC", "", "the Cassandra data centre this process runs in (as the nodes' cassandra-rackdc.properties name it): statements go to its nodes first, and SHELF_CONSISTENCY's LOCAL_QUORUM is its quorum; start-up refuses a keyspace replicated to several data centres without it, or one that holds no replica in it; empty: routing ignores data centres", Operator},
	{"SHELF_CASSANDRA_USERNAME", "", "user for PasswordAuthenticator (empty: no auth)", Operator},
	{"SHELF_CASSANDRA_PASSWORD", "", "its password (masked in the log)", Operator},
	{"SHELF_CASSANDRA_TIMEOUT", "2s", "client timeout of one attempt of a CQL statement (a retry or a copy has its own): what a request waits on a node that stopped answering before a compare-and-set is read back or an idempotent statement goes to the next node, and the least time that read-back gets past the request's deadline; (1 + SHELF_CASSANDRA_RETRIES) attempts must fit in SHELF_REQUEST_TIMEOUT", Tuning},
	{"SHELF_CASSANDRA_RETRIES", "2", "an idempotent statement (a read, a write USING TIMESTAMP) is sent again this often, each time to the next node, after a node could not answer (timeout, unavailable, overloaded, connection lost); compare-and-sets never after they may have run (their outcome is read back), only when a node refused them unrun (at most twice, whatever this says)", Tuning},
	{"SHELF_CASSANDRA_SPECULATIVE_COPIES", "1", "an idempotent statement unanswered after SHELF_CASSANDRA_SPECULATIVE_DELAY is also sent to this many other nodes (at most the other nodes known), the first answer wins: a hung or slow node costs a read the delay, not the timeout; compare-and-sets and SERIAL reads never (Paxos duels); 0: off", Tuning},
	{"SHELF_CASSANDRA_SPECULATIVE_DELAY", "200ms", "how long an idempotent statement waits for its node before a copy goes to the next: above the statements' healthy p99 (each copy is extra load), well below SHELF_CASSANDRA_TIMEOUT", Tuning},
	{"SHELF_CASSANDRA_CONN_TIMEOUT_LIMIT", "3", "a connection on which more statements than this timed out is closed and opened again (the fourth timeout, at 3): a node that stops answering (hung, cut off; its kernel keeps the TCP connection and keepalives alive) loses its connections within about one SHELF_CASSANDRA_TIMEOUT and is marked down when a new one fails within SHELF_CASSANDRA_CONNECT_TIMEOUT, instead of after about 40 s of failed driver heartbeats; process-wide; 0: never", Tuning},
	{"SHELF_CASSANDRA_SLOW_LOG", "1s", "an attempt of a CQL statement that took at least this long is logged as a warning (its kind, statement text without values, node, attempt number, time, error): which node and which statements a slow request waited on; 0s: off", Operator},
	{"SHELF_CASSANDRA_SCHEMA_TIMEOUT", "10s", "client timeout of one schema statement (keyspace creation, migrations): schema changes wait for the nodes to agree, seconds on a busy cluster; one that runs out is sent again only once the nodes agree on the schema", Tuning},
	{"SHELF_CASSANDRA_CONNECT_TIMEOUT", "5s", "timeout of one connection attempt", Tuning},
	{"SHELF_CASSANDRA_CONNECT_WAIT", "60s", "how long start-up retries an unreachable cluster (a warning at the first refusal says so; the error at the end says how to start or name a node)", Tuning},
	{"SHELF_CASSANDRA_RECONNECT_INTERVAL", "2s", "how often a node marked down is tried again", Tuning},
	{"SHELF_MIGRATE_ON_START", "true", "apply schema migrations when serve starts", Operator},
	{"SHELF_LOG_LEVEL", "info", "debug, info, warn or error", Operator},
	{"SHELF_LOG_FORMAT", "json", "json, or console for people", Operator},
	{"SHELF_LOG_FLUSH_INTERVAL", "100ms", "serve writes info lines (the access log) out together at most this often; warnings and errors at once; 0s: every line at once", Tuning},
	{"SHELF_HTTP_READ_HEADER_TIMEOUT", "5s", "time to read request headers", Tuning},
	{"SHELF_HTTP_READ_TIMEOUT", "15s", "time to read a whole request", Tuning},
	{"SHELF_HTTP_WRITE_TIMEOUT", "30s", "time to write a response", Tuning},
	{"SHELF_HTTP_IDLE_TIMEOUT", "120s", "keep-alive idle time", Tuning},
	{"SHELF_REQUEST_TIMEOUT", "10s", "deadline of one request's work (503 timeout past it); below SHELF_HTTP_WRITE_TIMEOUT, which closes the connection before a later answer", Tuning},
	{"SHELF_SHUTDOWN_TIMEOUT", "20s", "how long in-flight requests may drain on SIGTERM/SIGINT", Tuning},
	{"SHELF_MAX_BODY_BYTES", "1048576", "largest request body an operation that takes one reads (413 above); a body sent with a GET or a DELETE is ignored", Tuning},
	{"SHELF_TRUSTED_PROXIES", "", "comma-separated CIDRs whose X-Forwarded-For is believed", Operator},
	{"SHELF_CORS_ORIGINS", "", "comma-separated origins (e.g. https://app.example.org) whose browser pages may call the API; * for any; empty: no CORS", Operator},
	{"SHELF_PPROF_ADDR", "", "address (host:port, e.g. 127.0.0.1:6060) where net/http/pprof listens, on a server of its own; empty: off. Never expose it publicly", Operator},
	{"SHELF_METRICS_ADDR", "", "address (host:port, e.g. 127.0.0.1:9090) where /metrics is served, on a server of its own, and not on SHELF_HTTP_ADDR; empty: /metrics on the API's address", Operator},
	{"SHELF_CLAIM_LEASE", "30s", "how long a failed or dead signup can block its username and email", Tuning},
	{"SHELF_SESSION_TTL", "24h", "how long a login session lasts", Tuning},
	{"SHELF_SESSION_SEEN_INTERVAL", "5m", "a session's last-seen time is recorded by a request of it once it is this old (one write per session and interval, after the answer); 0s: every request", Tuning},
	{"SHELF_RATE_LIMIT_PER_MINUTE", "30", "signups, logins, account changes, mail requests and people searches per client IP a minute (each; IPv6 per /64, and four times this per /56); 0 turns the limit off", Tuning},
	{"SHELF_ARGON2_MEMORY_KIB", "19456", "argon2id memory of new password hashes, KiB (19 MiB); stored hashes with less are renewed at login", Tuning},
	{"SHELF_ARGON2_TIME", "2", "argon2id iterations", Tuning},
	{"SHELF_ARGON2_THREADS", "1", "argon2id parallelism", Tuning},
	{"SHELF_HASH_CONCURRENCY", "0", "password hashes computed at once (0: one per CPU); the rest wait", Tuning},
	{"SHELF_HIBP_URL", "", "Have I Been Pwned's Pwned Passwords API (https://api.pwnedpasswords.com): every new password is refused if its breaches hold it, asked by k-anonymity (GET {url}/range/{first 5 hex digits of its SHA-1}); empty: off (the built-in list of common passwords still applies)", Operator},
	{"SHELF_HIBP_FAIL", "open", "when that API cannot answer (down, slow, not a range): open lets the password through on the built-in checks (logged); closed refuses it (503 password_check_unavailable)", Operator},
	{"SHELF_HIBP_TIMEOUT", "2s", "bound of one request to that API", Tuning},
	{"SHELF_THROTTLE_PER_ADDRESS", "5", "failed password checks (and second-factor codes; recovery codes count on this tier alone) of one login (a username, an email, or an account's current password) from one client address (IPv6: its /64; its /56 counts too, at twice this and below SHELF_THROTTLE_PER_LOGIN) within SHELF_THROTTLE_WINDOW, counted by every instance together in Cassandra; beyond, 429 too_many_attempts with Retry-After, before any password is checked; 0 turns this tier off, at most 512", Tuning},
	{"SHELF_THROTTLE_PER_LOGIN", "50", "failed password checks (and second-factor codes) of one login from every address together within SHELF_THROTTLE_WINDOW (a stranger needs this ÷ SHELF_THROTTLE_PER_ADDRESS addresses to lock the owner out, for at most one window after the last counted failure), so it must be above SHELF_THROTTLE_PER_ADDRESS, and that above 0; 0 turns this tier off, at most 512", Tuning},
	{"SHELF_THROTTLE_WINDOW", "15m", "how long a failed password check counts (1s to 24h)", Tuning},
	{"SHELF_REQUIRE_ADMIN_FACTOR", "false", "true: admin powers (moderation, the audit, another's account, sessions, factors, groups and items, deletions, closings, jobs) only from a session whose login gave a second factor (403 admin_factor_required otherwise); reading any library or email as an admin is not gated", Operator},
	{"SHELF_WEBAUTHN_RP_ID", "", "the passkeys' relying party id: the console's domain or a parent of it (example.com); unset, SHELF_PUBLIC_URL's host when it is a name (localhost included), and passkeys are off (503 passkeys_off) when it is an address; checked against the origins at start", Operator},
	{"SHELF_WEBAUTHN_ORIGINS", "", "the origins passkeys answer from (https://app.example.com, comma-separated; http on localhost only); unset, SHELF_PUBLIC_URL's origin", Operator},
	{"SHELF_FACTOR_KEYS", "", "keys sealing authenticator secrets at rest: id:base64 of 32 bytes (openssl rand -base64 32), comma-separated, the first sealing and every one opening (rotation: put the new key first, keep the old until every secret was sealed again); unset, second factors are off (503 factors_off; a warning at start) unless SHELF_PUBLIC_URL is this machine, where a fixed development key seals them", Operator},
	{"SHELF_SUSPENSION_BUCKET", "month", "time span of one partition of the suspended list: month, week or day (set it once per keyspace)", Operator},
	{"SHELF_SUSPENSION_SWEEP_INTERVAL", "10s", "how often suspensions whose end has passed are lifted", Tuning},
	{"SHELF_FANOUT_SYNC_LIMIT", "1000", "items with at most this many members update every member library before a change answers; larger ones finish in the background", Tuning},
	{"SHELF_LEAN_MEMBERS", "100", "items with at most this many members keep lean library rows (a page shows them without reading the item; each change of the item removes its rows first); larger ones are checked by every page that shows them", Tuning},
	{"SHELF_FANOUT_CONCURRENCY", "16", "member libraries written at once by one fan-out", Tuning},
	{"SHELF_FANOUT_WORKERS", "4", "items fanned out in the background at once, per process", Tuning},
	{"SHELF_FANOUT_QUEUE", "1000", "items that may wait for a background fan-out, per process; a change of a waiting item joins it; beyond, changes are left to the outbox worker", Tuning},
	{"SHELF_OUTBOX_INTERVAL", "1s", "how often the outbox worker finishes fan-outs that stopped (a crash, a failed write)", Tuning},
	{"SHELF_OUTBOX_GRACE", "5s", "how old an outbox mark must be before the worker redoes its fan-out", Tuning},
	{"SHELF_JOB_INTERVAL", "2s", "how often the job worker looks for account deletions, group closings and library rebuilds under way, and for membership changes a stopped request left, and finishes them (a request that begins one wakes its own process's worker at once)", Tuning},
	{"SHELF_JOB_ITEMS_AT_ONCE", "4", "how many items of a page one job deletes or leaves at once (each with its own fan-out); one process runs one job at a time, so this bounds what a job adds to the load of the process and the cluster", Tuning},
	{"SHELF_JOB_LEASE", "30s", "how long a job's lease lasts without a report of progress (a page of items): a worker that stopped holds its job that long before another takes it on; keep it longer than the processes' clocks disagree (a worker whose clock runs behind by more loses every job it takes, finishing none)", Tuning},
	{"SHELF_MAILER", "log", "log: mail is written to the log, links and all (development only: a link is a credential; refused when SHELF_PUBLIC_URL is not localhost or a loopback address, unless SHELF_ALLOW_LOG_MAILER=true); smtp: sent through SHELF_SMTP_*", Operator},
	{"SHELF_ALLOW_LOG_MAILER", "false", "true: keep SHELF_MAILER=log although SHELF_PUBLIC_URL is not this machine (a staging host whose log only its developers read); every mailed link is then in the log", Operator},
	{"SHELF_PUBLIC_URL", "http://localhost:8080", "the console's address, the base of mailed links (/#/verify, /#/reset, /#/revert-email, /#/refuse-email, /#/revert-factor, each ?token=...); https with SHELF_MAILER=smtp unless this machine (localhost or a loopback address); on this machine but another port than the one served, a warning at start names the URL to set", Operator},
	{"SHELF_MAIL_FROM", "shelf <no-reply@localhost>", "sender of every mail", Operator},
	{"SHELF_SMTP_HOST", "", "SMTP server (SHELF_MAILER=smtp)", Operator},
	{"SHELF_SMTP_PORT", "587", "its port", Operator},
	{"SHELF_SMTP_USERNAME", "", "user for AUTH PLAIN (empty: no AUTH)", Operator},
	{"SHELF_SMTP_PASSWORD", "", "its password (masked in the log)", Operator},
	{"SHELF_SMTP_TLS", "starttls", "starttls (required), tls (implicit, port 465) or none (a local relay only)", Operator},
	{"SHELF_SMTP_TIMEOUT", "10s", "bound of one mail's SMTP conversation", Tuning},
	{"SHELF_VERIFY_EMAIL_TTL", "24h", "how long an email verification link works; at least 1h while SHELF_MAIL_PER_HOUR is on and SHELF_REQUIRE_VERIFIED_EMAIL true (the links a stranger's requests mail must work for as long as their mails hold the owner's request back)", Tuning},
	{"SHELF_RESET_PASSWORD_TTL", "1h", "how long a password reset link works; at least 1h while SHELF_MAIL_PER_HOUR is on (the links a stranger's resets mail must work for as long as their mails hold the owner's requests back)", Tuning},
	{"SHELF_REVERT_EMAIL_TTL", "168h", "how long the link mailed to the old address of an email change undoes it (the old address stays reserved for the account meanwhile), and how long a username the owner changes away from stays reserved for the account", Tuning},
	{"SHELF_REQUIRE_VERIFIED_EMAIL", "false", "true: login of an account whose email is not verified is refused (403 email_not_verified), admins excepted", Operator},
	{"SHELF_MAIL_PER_HOUR", "5", "mails to one email address an hour in each of its two budgets, every kind together: anyone's (verifications after signup, after a change of email or on request, resets) and the account's own (the notices of its email changes, password changes, factors and recovery codes, and verifications it asks for with its session), which no request naming the address alone spends; verifications take all but the last of a budget; counted by every instance together in Cassandra (beyond: requests answered the same, nothing sent); one who signed up with someone else's address can aim both at it, twice this an hour; 0 turns the limit off, else 2 to 512 (one would leave a verification the owner's only mail)", Tuning},
}

// Load reads the configuration from getenv (os.Getenv in production, a map
// in tests). Every bad value is reported, each naming its variable. It is
// long on purpose: one line per variable, so the whole mapping from
// environment to Config reads in one place.
func Load(getenv func(string) string) (Config, error) {
	p := parser{getenv: getenv}
	c := Config{
		HTTP: HTTP{
			Addr:              p.str("SHELF_HTTP_ADDR"),
			ReadHeaderTimeout: p.duration("SHELF_HTTP_READ_HEADER_TIMEOUT"),
			ReadTimeout:       p.duration("SHELF_HTTP_READ_TIMEOUT"),
			WriteTimeout:      p.duration("SHELF_HTTP_WRITE_TIMEOUT"),
			IdleTimeout:       p.duration("SHELF_HTTP_IDLE_TIMEOUT"),
			RequestTimeout:    p.duration("SHELF_REQUEST_TIMEOUT"),
			ShutdownTimeout:   p.duration("SHELF_SHUTDOWN_TIMEOUT"),
			MaxBodyBytes:      int64(p.positiveInt("SHELF_MAX_BODY_BYTES")),
			TrustedProxies:    p.prefixes("SHELF_TRUSTED_PROXIES"),
			CORSOrigins:       p.origins("SHELF_CORS_ORIGINS"),
			PprofAddr:         p.listenAddr("SHELF_PPROF_ADDR"),
			MetricsAddr:       p.listenAddr("SHELF_METRICS_ADDR"),
		},
		Cassandra: Cassandra{
			Hosts:             p.list("SHELF_CASSANDRA_HOSTS"),
			Keyspace:          p.keyspace("SHELF_KEYSPACE"),
			Replication:       p.replication("SHELF_REPLICATION"),
			Consistency:       p.oneOf("SHELF_CONSISTENCY", "ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE"),
			SerialConsistency: p.oneOf("SHELF_SERIAL_CONSISTENCY", "SERIAL", "LOCAL_SERIAL"),
			LocalDC:           p.str("SHELF_LOCAL_DC"),
			Username:          p.str("SHELF_CASSANDRA_USERNAME"),
			Password:          p.str("SHELF_CASSANDRA_PASSWORD"),
			Timeout:           p.duration("SHELF_CASSANDRA_TIMEOUT"),
			Retries:           p.nonNegativeInt("SHELF_CASSANDRA_RETRIES"),
			SpeculativeCopies: p.nonNegativeInt("SHELF_CASSANDRA_SPECULATIVE_COPIES"),
			SpeculativeDelay:  p.duration("SHELF_CASSANDRA_SPECULATIVE_DELAY"),
			TimeoutLimit:      p.nonNegativeInt("SHELF_CASSANDRA_CONN_TIMEOUT_LIMIT"),
			SlowLog:           p.durationOrZero("SHELF_CASSANDRA_SLOW_LOG"),
			SchemaTimeout:     p.duration("SHELF_CASSANDRA_SCHEMA_TIMEOUT"),
			ConnectTimeout:    p.duration("SHELF_CASSANDRA_CONNECT_TIMEOUT"),
			ConnectWait:       p.duration("SHELF_CASSANDRA_CONNECT_WAIT"),
			ReconnectInterval: p.duration("SHELF_CASSANDRA_RECONNECT_INTERVAL"),
		},
		Log: Log{
			Level:         p.oneOf("SHELF_LOG_LEVEL", "debug", "info", "warn", "error"),
			Format:        p.oneOf("SHELF_LOG_FORMAT", "json", "console"),
			FlushInterval: p.durationOrZero("SHELF_LOG_FLUSH_INTERVAL"),
		},
		MigrateOnStart: p.boolean("SHELF_MIGRATE_ON_START"),
		Accounts: Accounts{
			ClaimLease:          p.ttl("SHELF_CLAIM_LEASE"),
			SessionTTL:          p.ttl("SHELF_SESSION_TTL"),
			SessionSeenInterval: p.durationOrZero("SHELF_SESSION_SEEN_INTERVAL"),
			RateLimitPerMinute:  p.nonNegativeInt("SHELF_RATE_LIMIT_PER_MINUTE"),
			Argon2MemoryKiB:     p.positiveInt("SHELF_ARGON2_MEMORY_KIB"),
			Argon2Time:          p.positiveInt("SHELF_ARGON2_TIME"),
			Argon2Threads:       p.positiveInt("SHELF_ARGON2_THREADS"),
			HashConcurrency:     p.nonNegativeInt("SHELF_HASH_CONCURRENCY"),
			HIBPURL:             p.optionalURL("SHELF_HIBP_URL"),
			HIBPFailClosed:      p.oneOf("SHELF_HIBP_FAIL", "open", "closed") == "closed",
			HIBPTimeout:         p.duration("SHELF_HIBP_TIMEOUT"),
			ThrottlePerAddress:  p.countLimit("SHELF_THROTTLE_PER_ADDRESS"),
			ThrottlePerLogin:    p.countLimit("SHELF_THROTTLE_PER_LOGIN"),
			ThrottleWindow:      p.duration("SHELF_THROTTLE_WINDOW"),
			FactorKeys:          p.str("SHELF_FACTOR_KEYS"),
			RequireAdminFactor:  p.boolean("SHELF_REQUIRE_ADMIN_FACTOR"),
			WebAuthnRPID:        p.str("SHELF_WEBAUTHN_RP_ID"),
			WebAuthnOrigins:     p.list("SHELF_WEBAUTHN_ORIGINS"),
		},
	}
	c.Content = Content{
		SyncFanoutLimit:   p.nonNegativeInt("SHELF_FANOUT_SYNC_LIMIT"),
		LeanMembers:       p.positiveInt("SHELF_LEAN_MEMBERS"),
		FanoutConcurrency: p.positiveInt("SHELF_FANOUT_CONCURRENCY"),
		FanoutWorkers:     p.positiveInt("SHELF_FANOUT_WORKERS"),
		FanoutQueue:       p.positiveInt("SHELF_FANOUT_QUEUE"),
		OutboxInterval:    p.duration("SHELF_OUTBOX_INTERVAL"),
		OutboxGrace:       p.duration("SHELF_OUTBOX_GRACE"),
		JobInterval:       p.duration("SHELF_JOB_INTERVAL"),
		JobLease:          p.duration("SHELF_JOB_LEASE"),
		JobItemsAtOnce:    p.positiveInt("SHELF_JOB_ITEMS_AT_ONCE"),
	}
	c.Mail = Mail{
		Mailer:          p.oneOf("SHELF_MAILER", "log", "smtp"),
		AllowLogMailer:  p.boolean("SHELF_ALLOW_LOG_MAILER"),
		PublicURL:       p.publicURL("SHELF_PUBLIC_URL"),
		From:            p.str("SHELF_MAIL_FROM"),
		SMTPHost:        p.str("SHELF_SMTP_HOST"),
		SMTPPort:        p.positiveInt("SHELF_SMTP_PORT"),
		SMTPUsername:    p.str("SHELF_SMTP_USERNAME"),
		SMTPPassword:    p.str("SHELF_SMTP_PASSWORD"),
		SMTPTLS:         p.oneOf("SHELF_SMTP_TLS", "starttls", "tls", "none"),
		SMTPTimeout:     p.duration("SHELF_SMTP_TIMEOUT"),
		VerifyTTL:       p.ttl("SHELF_VERIFY_EMAIL_TTL"),
		ResetTTL:        p.ttl("SHELF_RESET_PASSWORD_TTL"),
		RevertTTL:       p.ttl("SHELF_REVERT_EMAIL_TTL"),
		RequireVerified: p.boolean("SHELF_REQUIRE_VERIFIED_EMAIL"),
		PerHour:         p.countLimit("SHELF_MAIL_PER_HOUR"),
	}
	if c.Mail.Mailer == "smtp" && c.Mail.SMTPHost == "" {
		p.fail("SHELF_SMTP_HOST", "is needed with SHELF_MAILER=smtp")
	}
	if c.Mail.PlainLinksRefused() {
		p.fail("SHELF_PUBLIC_URL", "%q is plain http on another machine, and SHELF_MAILER=smtp mails links carrying tokens (verify, reset, revert) that anyone who sees one click's traffic could use: "+
			"serve the console over TLS and set SHELF_PUBLIC_URL to its https:// address (http only for localhost or a loopback address)", c.Mail.PublicURL)
	}
	if c.Mail.LogMailerRefused() {
		p.fail("SHELF_MAILER", "log writes every mail, its working links included, to the log, and SHELF_PUBLIC_URL %q is not this machine: "+
			"set SHELF_MAILER=smtp and SHELF_SMTP_HOST (or SHELF_ALLOW_LOG_MAILER=true, if whoever reads the log may hold any account)", c.Mail.PublicURL)
	}
	if c.Accounts.FactorKeys != "" {
		if _, err := factor.ParseKeys(c.Accounts.FactorKeys); err != nil {
			p.fail("SHELF_FACTOR_KEYS", "%v", err)
		}
	}
	if c.Accounts.WebAuthnRPID != "" || len(c.Accounts.WebAuthnOrigins) > 0 {
		if id, origins, err := c.RelyingParty(); err != nil {
			p.fail("SHELF_WEBAUTHN_RP_ID", "%v (origins %v)", err, origins)
		} else if id == "" {
			p.fail("SHELF_WEBAUTHN_RP_ID", "is needed with SHELF_WEBAUTHN_ORIGINS")
		}
	}
	if c.Mail.SMTPPort > 65535 {
		p.fail("SHELF_SMTP_PORT", "%d is not a port", c.Mail.SMTPPort)
	}
	c.Moderation = Moderation{
		BucketSize:    p.oneOf("SHELF_SUSPENSION_BUCKET", "month", "week", "day"),
		SweepInterval: p.duration("SHELF_SUSPENSION_SWEEP_INTERVAL"),
	}
	if c.Accounts.Argon2Threads > 255 {
		p.fail("SHELF_ARGON2_THREADS", "%d is more than 255", c.Accounts.Argon2Threads)
	}
	// The hasher takes both as 32 bits: a larger value wrapped (2^32 KiB
	// of memory became the least argon2 allows, 2^32 rounds none).
	if n := c.Accounts.Argon2MemoryKiB; uint64(n) > math.MaxUint32 {
		p.fail("SHELF_ARGON2_MEMORY_KIB", "%d is more than %d", n, uint32(math.MaxUint32))
	}
	if n := c.Accounts.Argon2Time; uint64(n) > math.MaxUint32 {
		p.fail("SHELF_ARGON2_TIME", "%d is more than %d", n, uint32(math.MaxUint32))
	}
	if c.Accounts.ClaimLease > 0 && c.Accounts.ClaimLease < time.Second {
		p.fail("SHELF_CLAIM_LEASE", "%v is shorter than one second (TTLs are whole seconds)", c.Accounts.ClaimLease)
	}
	if w := c.Accounts.ThrottleWindow; w > 0 && (w < time.Second || w > 24*time.Hour) {
		p.fail("SHELF_THROTTLE_WINDOW", "%v is not between one second and 24h (a row's TTL, in whole seconds)", w)
	}
	if a, l := c.Accounts.ThrottlePerAddress, c.Accounts.ThrottlePerLogin; l > 0 && (a == 0 || l <= a) {
		// One address would fill the login's tier: a stranger's lockout of
		// the owner (TestOneAddressCannotFillALoginsBudget).
		p.fail("SHELF_THROTTLE_PER_LOGIN", "%d with SHELF_THROTTLE_PER_ADDRESS %d lets one client address fill a login's budget and keep its owner out; set it above SHELF_THROTTLE_PER_ADDRESS (and that above 0), or 0 to turn it off", l, a)
	}
	if c.Mail.PerHour == 1 {
		// Verification links take all but a budget's last mail: under a
		// limit of one there is no last, and a stranger's request for a
		// verification (or a thief's, with the session) takes the hour's
		// only mail from the owner's reset link or a change's notice
		// (TestAMailLimitOfOneIsRefused).
		p.fail("SHELF_MAIL_PER_HOUR", "1 leaves an address one mail an hour in each budget, which anyone's request for a verification link would take, holding back the owner's reset link or the notice of a change for the rest of the hour; set it to 2 or more, or 0 to turn the limit off")
	}
	if m := c.Mail; m.PerHour > 0 && m.ResetTTL > 0 && m.ResetTTL < time.Hour {
		// A mail counts against its address for the hour the setting
		// names: a stranger's resets must leave the owner links that work
		// for as long as they hold her own requests back
		// (TestAResetLinkOutlivesTheHourItsMailCounts).
		p.fail("SHELF_RESET_PASSWORD_TTL", "%v is shorter than the hour a mail counts against SHELF_MAIL_PER_HOUR %d: a stranger who asks for an address's resets at the top of each hour would leave its owner no working link, her own requests held back, for the rest of it; set it to 1h or more, or SHELF_MAIL_PER_HOUR to 0", m.ResetTTL, m.PerHour)
	}
	if m := c.Mail; m.RequireVerified && m.PerHour > 0 && m.VerifyTTL > 0 && m.VerifyTTL < time.Hour {
		// The owner of an address not verified has no session to ask with
		// here, so her request spends anyone's budget: the links a
		// stranger's requests mail her must work for as long as they hold
		// hers back (TestAVerificationLinkOutlivesTheHourItsMailCounts).
		p.fail("SHELF_VERIFY_EMAIL_TTL", "%v is shorter than the hour a mail counts against SHELF_MAIL_PER_HOUR %d while SHELF_REQUIRE_VERIFIED_EMAIL is on: a stranger who asks for an address's verifications at the top of each hour would leave its owner, who may not log in to ask with her session, no working link and her own request held back for the rest of it; set it to 1h or more, or SHELF_MAIL_PER_HOUR to 0", m.VerifyTTL, m.PerHour)
	}
	if sameAddr(c.HTTP.PprofAddr, c.HTTP.Addr) {
		p.fail("SHELF_PPROF_ADDR", "%q is SHELF_HTTP_ADDR; pprof needs an address of its own", c.HTTP.PprofAddr)
	}
	if h := c.HTTP; h.RequestTimeout > 0 && h.WriteTimeout > 0 && h.RequestTimeout >= h.WriteTimeout {
		// net/http closes the connection at the write timeout: a request
		// that ran out would never get its 503
		// (TestRequestEndsBeforeItsAnswerMayNoLongerBeWritten).
		p.fail("SHELF_REQUEST_TIMEOUT", "%v is not below SHELF_HTTP_WRITE_TIMEOUT %v: the connection would be closed before a request that ran out could answer its 503; set SHELF_REQUEST_TIMEOUT below SHELF_HTTP_WRITE_TIMEOUT (or SHELF_HTTP_WRITE_TIMEOUT above it)", h.RequestTimeout, h.WriteTimeout)
	}
	cas := c.Cassandra
	// (1 + Retries) × Timeout < RequestTimeout, without the product (a
	// large count would overflow it and pass).
	if cas.Timeout > 0 && c.HTTP.RequestTimeout > 0 && int64(cas.Retries) >= int64((c.HTTP.RequestTimeout-1)/cas.Timeout) {
		p.fail("SHELF_CASSANDRA_TIMEOUT", "%v × (1 + SHELF_CASSANDRA_RETRIES %d) attempts does not fit in SHELF_REQUEST_TIMEOUT %v", cas.Timeout, cas.Retries, c.HTTP.RequestTimeout)
	}
	if cas.SpeculativeCopies > 0 && cas.SpeculativeDelay >= cas.Timeout {
		p.fail("SHELF_CASSANDRA_SPECULATIVE_DELAY", "%v is not below SHELF_CASSANDRA_TIMEOUT %v: no copy would ever go out before the timeout", cas.SpeculativeDelay, cas.Timeout)
	}
	if a := c.HTTP.MetricsAddr; sameAddr(a, c.HTTP.Addr) || sameAddr(a, c.HTTP.PprofAddr) {
		p.fail("SHELF_METRICS_ADDR", "%q is SHELF_HTTP_ADDR or SHELF_PPROF_ADDR; metrics need an address of their own", a)
	}
	if len(c.Cassandra.Hosts) == 0 {
		p.fail("SHELF_CASSANDRA_HOSTS", "needs at least one host")
	}
	return c, errors.Join(p.errs...)
}

// LogMailerRefused says whether the log mailer would write working links
// where it must not. It is SHELF_MAILER's default, and a production that
// forgot SHELF_MAILER would keep every reset link in its log: whoever read
// the log could take any account. Development is where the links lead to
// this machine (SHELF_PUBLIC_URL on localhost or a loopback address, its
// default): there the log mailer is what make run and the tests need.
// Elsewhere it takes SHELF_ALLOW_LOG_MAILER=true.
func (m Mail) LogMailerRefused() bool {
	return m.Mailer == "log" && !m.AllowLogMailer && !isLoopbackURL(m.PublicURL)
}

// PlainLinksRefused says whether mail leaving this machine (SMTP) would
// carry links, each with a token that verifies an address, resets a
// password or reverts a change, to a plain-http address on another
// machine: the token would cross the network readable by anyone on the
// path of one click. http stays for this machine, where it does not.
func (m Mail) PlainLinksRefused() bool {
	u, err := url.Parse(m.PublicURL)
	return m.Mailer == "smtp" && err == nil && u.Scheme == "http" && !isLoopbackURL(m.PublicURL)
}

// IsLoopbackURL says whether raw's host is this machine (isLoopbackURL).
func IsLoopbackURL(raw string) bool { return isLoopbackURL(raw) }

// isLoopbackURL says whether raw's host is this machine: localhost, a name
// under .localhost (RFC 6761: resolved to loopback), or a loopback address.
func isLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// sameAddr says whether two listeners would ask for one address: the same
// host:port, set, and not port 0 (each of those gets a free port).
func sameAddr(a, b string) bool {
	return a != "" && a == b && !strings.HasSuffix(a, ":0")
}

// Fields returns the effective configuration as name/value pairs for the
// start-up log, with secrets masked.
func (c Config) Fields() map[string]string {
	password, smtpPassword := "", ""
	if c.Cassandra.Password != "" {
		password = "***"
	}
	if c.Mail.SMTPPassword != "" {
		smtpPassword = "***"
	}
	hibpFail := "open"
	if c.Accounts.HIBPFailClosed {
		hibpFail = "closed"
	}
	proxies := make([]string, len(c.HTTP.TrustedProxies))
	for i, p := range c.HTTP.TrustedProxies {
		proxies[i] = p.String()
	}
	return map[string]string{
		"SHELF_HTTP_ADDR":                    c.HTTP.Addr,
		"SHELF_CASSANDRA_HOSTS":              strings.Join(c.Cassandra.Hosts, ","),
		"SHELF_KEYSPACE":                     c.Cassandra.Keyspace,
		"SHELF_REPLICATION":                  c.Cassandra.Replication.String(),
		"SHELF_CONSISTENCY":                  c.Cassandra.Consistency,
		"SHELF_SERIAL_CONSISTENCY":           c.Cassandra.SerialConsistency,
		"SHELF_LOCAL_DC":                     c.Cassandra.LocalDC,
		"SHELF_CASSANDRA_USERNAME":           c.Cassandra.Username,
		"SHELF_CASSANDRA_PASSWORD":           password,
		"SHELF_CASSANDRA_TIMEOUT":            c.Cassandra.Timeout.String(),
		"SHELF_CASSANDRA_SLOW_LOG":           c.Cassandra.SlowLog.String(),
		"SHELF_CASSANDRA_RETRIES":            strconv.Itoa(c.Cassandra.Retries),
		"SHELF_CASSANDRA_SPECULATIVE_COPIES": strconv.Itoa(c.Cassandra.SpeculativeCopies),
		"SHELF_CASSANDRA_SPECULATIVE_DELAY":  c.Cassandra.SpeculativeDelay.String(),
		"SHELF_CASSANDRA_CONN_TIMEOUT_LIMIT": strconv.Itoa(c.Cassandra.TimeoutLimit),
		"SHELF_CASSANDRA_SCHEMA_TIMEOUT":     c.Cassandra.SchemaTimeout.String(),
		"SHELF_CASSANDRA_CONNECT_TIMEOUT":    c.Cassandra.ConnectTimeout.String(),
		"SHELF_CASSANDRA_CONNECT_WAIT":       c.Cassandra.ConnectWait.String(),
		"SHELF_CASSANDRA_RECONNECT_INTERVAL": c.Cassandra.ReconnectInterval.String(),
		"SHELF_MIGRATE_ON_START":             strconv.FormatBool(c.MigrateOnStart),
		"SHELF_LOG_LEVEL":                    c.Log.Level,
		"SHELF_LOG_FORMAT":                   c.Log.Format,
		"SHELF_LOG_FLUSH_INTERVAL":           c.Log.FlushInterval.String(),
		"SHELF_HTTP_READ_HEADER_TIMEOUT":     c.HTTP.ReadHeaderTimeout.String(),
		"SHELF_HTTP_READ_TIMEOUT":            c.HTTP.ReadTimeout.String(),
		"SHELF_HTTP_WRITE_TIMEOUT":           c.HTTP.WriteTimeout.String(),
		"SHELF_HTTP_IDLE_TIMEOUT":            c.HTTP.IdleTimeout.String(),
		"SHELF_REQUEST_TIMEOUT":              c.HTTP.RequestTimeout.String(),
		"SHELF_SHUTDOWN_TIMEOUT":             c.HTTP.ShutdownTimeout.String(),
		"SHELF_MAX_BODY_BYTES":               strconv.FormatInt(c.HTTP.MaxBodyBytes, 10),
		"SHELF_TRUSTED_PROXIES":              strings.Join(proxies, ","),
		"SHELF_CORS_ORIGINS":                 strings.Join(c.HTTP.CORSOrigins, ","),
		"SHELF_PPROF_ADDR":                   c.HTTP.PprofAddr,
		"SHELF_METRICS_ADDR":                 c.HTTP.MetricsAddr,
		"SHELF_CLAIM_LEASE":                  c.Accounts.ClaimLease.String(),
		"SHELF_SESSION_TTL":                  c.Accounts.SessionTTL.String(),
		"SHELF_SESSION_SEEN_INTERVAL":        c.Accounts.SessionSeenInterval.String(),
		"SHELF_RATE_LIMIT_PER_MINUTE":        strconv.Itoa(c.Accounts.RateLimitPerMinute),
		"SHELF_ARGON2_MEMORY_KIB":            strconv.Itoa(c.Accounts.Argon2MemoryKiB),
		"SHELF_ARGON2_TIME":                  strconv.Itoa(c.Accounts.Argon2Time),
		"SHELF_ARGON2_THREADS":               strconv.Itoa(c.Accounts.Argon2Threads),
		"SHELF_HASH_CONCURRENCY":             strconv.Itoa(c.Accounts.HashConcurrency),
		"SHELF_HIBP_URL":                     c.Accounts.HIBPURL,
		"SHELF_HIBP_FAIL":                    hibpFail,
		"SHELF_HIBP_TIMEOUT":                 c.Accounts.HIBPTimeout.String(),
		"SHELF_THROTTLE_PER_ADDRESS":         strconv.Itoa(c.Accounts.ThrottlePerAddress),
		"SHELF_THROTTLE_PER_LOGIN":           strconv.Itoa(c.Accounts.ThrottlePerLogin),
		"SHELF_THROTTLE_WINDOW":              c.Accounts.ThrottleWindow.String(),
		"SHELF_FACTOR_KEYS":                  factorKeyIDs(c.Accounts.FactorKeys),
		"SHELF_REQUIRE_ADMIN_FACTOR":         strconv.FormatBool(c.Accounts.RequireAdminFactor),
		"SHELF_WEBAUTHN_RP_ID":               c.Accounts.WebAuthnRPID,
		"SHELF_WEBAUTHN_ORIGINS":             strings.Join(c.Accounts.WebAuthnOrigins, ","),
		"SHELF_SUSPENSION_BUCKET":            c.Moderation.BucketSize,
		"SHELF_SUSPENSION_SWEEP_INTERVAL":    c.Moderation.SweepInterval.String(),
		"SHELF_FANOUT_SYNC_LIMIT":            strconv.Itoa(c.Content.SyncFanoutLimit),
		"SHELF_LEAN_MEMBERS":                 strconv.Itoa(c.Content.LeanMembers),
		"SHELF_FANOUT_CONCURRENCY":           strconv.Itoa(c.Content.FanoutConcurrency),
		"SHELF_FANOUT_WORKERS":               strconv.Itoa(c.Content.FanoutWorkers),
		"SHELF_FANOUT_QUEUE":                 strconv.Itoa(c.Content.FanoutQueue),
		"SHELF_OUTBOX_INTERVAL":              c.Content.OutboxInterval.String(),
		"SHELF_OUTBOX_GRACE":                 c.Content.OutboxGrace.String(),
		"SHELF_JOB_INTERVAL":                 c.Content.JobInterval.String(),
		"SHELF_JOB_LEASE":                    c.Content.JobLease.String(),
		"SHELF_JOB_ITEMS_AT_ONCE":            strconv.Itoa(c.Content.JobItemsAtOnce),
		"SHELF_MAILER":                       c.Mail.Mailer,
		"SHELF_ALLOW_LOG_MAILER":             strconv.FormatBool(c.Mail.AllowLogMailer),
		"SHELF_PUBLIC_URL":                   c.Mail.PublicURL,
		"SHELF_MAIL_FROM":                    c.Mail.From,
		"SHELF_SMTP_HOST":                    c.Mail.SMTPHost,
		"SHELF_SMTP_PORT":                    strconv.Itoa(c.Mail.SMTPPort),
		"SHELF_SMTP_USERNAME":                c.Mail.SMTPUsername,
		"SHELF_SMTP_PASSWORD":                smtpPassword,
		"SHELF_SMTP_TLS":                     c.Mail.SMTPTLS,
		"SHELF_SMTP_TIMEOUT":                 c.Mail.SMTPTimeout.String(),
		"SHELF_VERIFY_EMAIL_TTL":             c.Mail.VerifyTTL.String(),
		"SHELF_RESET_PASSWORD_TTL":           c.Mail.ResetTTL.String(),
		"SHELF_REVERT_EMAIL_TTL":             c.Mail.RevertTTL.String(),
		"SHELF_REQUIRE_VERIFIED_EMAIL":       strconv.FormatBool(c.Mail.RequireVerified),
		"SHELF_MAIL_PER_HOUR":                strconv.Itoa(c.Mail.PerHour),
	}
}

// factorKeyIDs is what the log shows of SHELF_FACTOR_KEYS: the keys' ids.
func factorKeyIDs(raw string) string {
	if raw == "" {
		return ""
	}
	keys, err := factor.ParseKeys(raw)
	if err != nil {
		return "(invalid)"
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID + ":***"
	}
	return strings.Join(ids, ",")
}

// FactorKeysOrDevelopment are the keys that seal authenticator secrets:
// SHELF_FACTOR_KEYS; unset, the development key on a loopback
// SHELF_PUBLIC_URL, and none (second factors off) elsewhere.
func (c Config) FactorKeysOrDevelopment() []factor.Key {
	if c.Accounts.FactorKeys == "" {
		if isLoopbackURL(c.Mail.PublicURL) {
			return []factor.Key{factor.DevelopmentKey()}
		}
		return nil
	}
	keys, _ := factor.ParseKeys(c.Accounts.FactorKeys)
	return keys
}

// RelyingParty is the passkeys' relying party: SHELF_WEBAUTHN_RP_ID and
// SHELF_WEBAUTHN_ORIGINS, each defaulting to SHELF_PUBLIC_URL's host and
// origin; id "" (passkeys off) when SHELF_WEBAUTHN_RP_ID is unset and the
// public URL's host is an address, which browsers refuse as an id (Load
// refuses that when SHELF_WEBAUTHN_ORIGINS is set). err says why a
// relying party set, or derived, does not hold (factor.CheckRelyingParty).
func (c Config) RelyingParty() (id string, origins []string, err error) {
	id, origins = c.Accounts.WebAuthnRPID, c.Accounts.WebAuthnOrigins
	u, perr := url.Parse(c.Mail.PublicURL)
	if len(origins) == 0 && perr == nil && u.Host != "" {
		origins = []string{u.Scheme + "://" + u.Host}
	}
	if id == "" && perr == nil {
		if _, aerr := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); aerr != nil {
			id = u.Hostname()
		}
	}
	if id == "" {
		return "", origins, nil
	}
	return id, origins, factor.CheckRelyingParty(id, origins)
}
