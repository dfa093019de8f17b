// Package app wires shelf together: the Cassandra session, the repository,
// the domain services and the HTTP router, and runs them (serve, migrate,
// the operator commands). Run parses the command line; Main, the program
// of cmd/api, calls it. End-to-end tests (tests/e2e) build the same App
// the server runs (New).
package app

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/rs/zerolog"
	"github.com/scylladb/gocqlx/v2"

	"shelf"
	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
	"shelf/handlers"
	"shelf/internal/config"
	"shelf/internal/factor"
	"shelf/internal/mail"
	"shelf/internal/metrics"
	"shelf/internal/password"
	"shelf/repository"
)

// App is the wired service: stores, domain services and the router.
type App struct {
	DB         *repository.DB
	Accounts   *accounts.Service
	Moderation *moderation.Service
	Groups     *groups.Service
	Contents   *library.Service
	// Lifecycle deletes accounts, closes groups and rebuilds libraries,
	// as jobs its worker runs (WorkJobs), and repairs deletions and
	// closings.
	Lifecycle *lifecycle.Service
	Metrics   *metrics.Metrics
	Router    http.Handler
}

// New wires the repository into the domain and the domain into the HTTP
// layer on session. Metrics go to m (the session's CQL observer, when it
// was opened with one by Connect); nil gives the app metrics of its own.
// The server passes no opts (options.go).
func New(cfg config.Config, logger zerolog.Logger, session gocqlx.Session, m *metrics.Metrics, opts ...Option) (*App, error) {
	w := wiringOf(opts)
	if m == nil {
		m = metrics.New()
	}
	ready, err := repository.NewReadiness(session)
	if err != nil {
		return nil, err
	}
	db := repository.NewDB(session, cfg.Cassandra.SerialConsistency)
	// One clock for the services and the stores: time.Now, shifted in
	// tests of clock skew (ClockOffset).
	now := time.Now
	if off := w.clockOffset; off != 0 {
		now = func() time.Time { return time.Now().Add(off) }
	}
	db.Now = now
	if cfg.Cassandra.Timeout > 0 {
		db.Attempt = cfg.Cassandra.Timeout
	}
	db.OnLWT = func(outcome string) { m.LWTOutcomes.WithLabelValues(outcome).Inc() }
	db.OnIndexPass = func(index string, p repository.IndexPass) {
		m.AttemptIndexLag.WithLabelValues(index).Set(p.Lag.Seconds())
		m.AttemptIndexHeld.WithLabelValues(index).Set(float64(p.Held))
		m.AttemptIndexHeldOldest.WithLabelValues(index).Set(p.OldestHeld.Seconds())
	}
	// One instance of each store; every service gets the ones it uses.
	log := domainLogger{logger}
	users, sessions := repository.NewUsers(db), repository.NewSessions(db)
	// The repository's, unless an Option replaced them (WithStores).
	stores := w.stores(db, Stores{Users: users, Groups: repository.NewGroups(db), Claims: repository.NewClaims(db)})
	accountRows, groupRows, claims := stores.Users, stores.Groups, stores.Claims
	// One audit of admin actions on accounts, written by both services
	// that make them.
	audit := repository.NewAccountAudit(db)
	// One index of admins' attempts in progress, finished by moderation's
	// sweeper: suspensions and lifts, and the accounts' admin changes.
	inProgress := repository.NewModerationAttempts(db)
	acc, err := newAccounts(cfg, logger, db, accountRows, sessions, claims, audit, moderation.AdminIntents{Index: inProgress, Now: now}, m, now, w.accountsBackground)
	if err != nil {
		return nil, err
	}
	suspensions, libraries := repository.NewSuspensions(db), repository.NewLibraries(db)
	modNow := now
	if w.moderationClock != nil {
		modNow = w.moderationClock(now)
	}
	mod := moderation.New(moderation.Config{BucketSize: cfg.Moderation.BucketSize, Now: modNow, Attempts: inProgress,
		Audit: audit, Log: log}, acc, users, suspensions)
	closings := repository.NewClosings(db)
	grp := groups.New(groups.Config{ClaimLease: cfg.Accounts.ClaimLease, Now: now, TurnWait: w.turnWait, Closings: closings,
		Changes: repository.NewGroupChanges(db)},
		acc, users, claims, groupRows, repository.NewGroupMembers(db), log)
	lib := library.New(library.Config{
		SyncFanoutLimit: cfg.Content.SyncFanoutLimit, FanoutConcurrency: cfg.Content.FanoutConcurrency, Now: now,
		Background:  domain.InGoroutine,
		LeanMembers: cfg.Content.LeanMembers,
		ObserveFanout: func(members int, took time.Duration) {
			m.FanoutDuration.Observe(took.Seconds())
			m.FanoutLibraries.Add(float64(members))
		},
		FanoutWorkers: cfg.Content.FanoutWorkers, FanoutQueue: cfg.Content.FanoutQueue, OutboxGrace: cfg.Content.OutboxGrace,
		ObservePool: func(e library.PoolEvent) {
			m.FanoutWaiting.Set(float64(e.Waiting))
			m.FanoutRunning.Set(float64(e.Running))
			if e.Coalesced {
				m.FanoutCoalesced.Inc()
			}
			if e.LeftToOutbox {
				m.FanoutLeftToOutbox.Inc()
			}
		},
	}, acc, users, grp, library.Stores{
		Content: repository.NewContents(db), Members: repository.NewContentMembers(db),
		Library: libraries, Outbox: repository.NewOutbox(db),
	}, log)
	life := lifecycle.New(lifecycle.Config{Now: now, JobLease: cfg.Content.JobLease, JobItemsAtOnce: cfg.Content.JobItemsAtOnce, ChangeGrace: w.changeGrace}, acc, mod, grp, lib, lifecycle.Stores{
		Jobs: repository.NewJobs(db), Queue: repository.NewJobQueue(db), Deletions: repository.NewDeletions(db), Closings: closings,
	})
	router := handlers.NewRouter(handlers.Deps{
		Logger:             logger,
		Ready:              ready,
		OpenAPI:            shelf.OpenAPI,
		MaxBodyBytes:       cfg.HTTP.MaxBodyBytes,
		RequestTimeout:     cfg.HTTP.RequestTimeout,
		TrustedProxies:     cfg.HTTP.TrustedProxies,
		Accounts:           acc,
		RateLimitPerMinute: cfg.Accounts.RateLimitPerMinute,
		Moderation:         mod,
		Groups:             grp,
		Contents:           lib,
		Lifecycle:          life,
		Metrics:            m,
		MetricsElsewhere:   cfg.HTTP.MetricsAddr != "",
		CORSOrigins:        cfg.HTTP.CORSOrigins,
	})
	return &App{DB: db, Accounts: acc, Moderation: mod, Groups: grp, Contents: lib, Lifecycle: life,
		Metrics: m, Router: router}, nil
}

// newAccounts builds the accounts service with everything it works with:
// its password hasher, the checks of new passwords, the throttle, the
// search, mail, the audit, the second factors, and background, which runs
// the work it leaves for after an answer.
func newAccounts(cfg config.Config, logger zerolog.Logger, db *repository.DB, users accounts.UserStore, sessions accounts.SessionStore,
	claims domain.ClaimStore, audit accounts.AuditLog, intents accounts.Intents, m *metrics.Metrics, now func() time.Time, background func(func())) (*accounts.Service, error) {
	c := cfg.Accounts
	hasher := password.New(password.Params{
		MemoryKiB: uint32(c.Argon2MemoryKiB), Time: uint32(c.Argon2Time), Threads: uint8(c.Argon2Threads),
	}, c.HashConcurrency)
	hasher.OnWait(func(d time.Duration) { m.HashWait.Observe(d.Seconds()) })
	checks := accounts.PasswordChecks{Guesser: password.Guesser{}, BreachFailClosed: c.HIBPFailClosed}
	if c.HIBPURL != "" {
		checks.Breached = password.NewPwned(c.HIBPURL, c.HIBPTimeout)
	}
	ac := accounts.Config{ClaimLease: c.ClaimLease, SessionTTL: c.SessionTTL, SeenInterval: c.SessionSeenInterval, Now: now, Background: background,
		RequireAdminFactor: c.RequireAdminFactor, Passwords: checks, Audit: audit, Intents: intents, Search: repository.NewUserSearch(db),
		Throttle: accounts.Throttle{Store: repository.NewAttempts(db), PerAddress: c.ThrottlePerAddress,
			PerLogin: c.ThrottlePerLogin, Window: c.ThrottleWindow}}
	var err error
	if ac.Mail, err = mailOf(cfg.Mail, logger, repository.NewTokens(db)); err != nil {
		return nil, err
	}
	ac.FactorRows = repository.NewFactors(db)
	if err := factorsOf(&ac, cfg, logger, ac.FactorRows); err != nil {
		return nil, err
	}
	return accounts.New(ac, claims, users, sessions, hasher, domainLogger{logger}), nil
}

// mailOf is the accounts' mail: their mailer (the log, or SMTP) and tokens.
func mailOf(c config.Mail, logger zerolog.Logger, tokens accounts.TokenStore) (accounts.Mail, error) {
	var mailer accounts.Mailer = mail.Log{Logger: logger}
	if c.Mailer == "smtp" {
		m, err := mail.NewSMTP(mail.SMTPConfig{Host: c.SMTPHost, Port: c.SMTPPort, Username: c.SMTPUsername,
			Password: c.SMTPPassword, TLS: c.SMTPTLS, From: c.From, Timeout: c.SMTPTimeout})
		if err != nil {
			return accounts.Mail{}, err
		}
		mailer = m
	} else {
		logger.Warn().Msg("SHELF_MAILER=log: mail is written to the log, with its links, and not sent; set SHELF_MAILER=smtp in production")
	}
	return accounts.Mail{Tokens: tokens, Mailer: mailer, PublicURL: c.PublicURL,
		VerifyTTL: c.VerifyTTL, ResetTTL: c.ResetTTL, RevertTTL: c.RevertTTL, RequireVerified: c.RequireVerified, PerAddress: c.PerHour}, nil
}

// domainLogger lets the domain log through zerolog without importing it.
type domainLogger struct{ logger zerolog.Logger }

func (d domainLogger) Warn(ctx context.Context, msg string, kv ...string) {
	l, ok := handlers.RequestLogger(ctx)
	if !ok {
		l = d.logger
	}
	e := l.Warn()
	for i := 0; i+1 < len(kv); i += 2 {
		e = e.Str(kv[i], kv[i+1])
	}
	e.Msg(msg)
}

// factorsOf turns second factors on in ac with the keys of the settings
// (config.FactorKeysOrDevelopment); without keys they stay off, and the
// start says so.
func factorsOf(ac *accounts.Config, cfg config.Config, logger zerolog.Logger, store accounts.FactorStore) error {
	keys := cfg.FactorKeysOrDevelopment()
	if len(keys) == 0 {
		logger.Warn().Msg("second factors are off: set SHELF_FACTOR_KEYS (openssl rand -base64 32, as id:base64) to turn them on")
		return nil
	}
	issuer := "shelf"
	if u, err := url.Parse(cfg.Mail.PublicURL); err == nil && u.Hostname() != "" {
		issuer = "shelf (" + u.Hostname() + ")"
	}
	totp, err := factor.New(issuer, keys)
	if err != nil {
		return err
	}
	if cfg.Accounts.FactorKeys == "" {
		logger.Warn().Msg("second factors are sealed with the development key: set SHELF_FACTOR_KEYS before anyone else reaches this service")
	}
	ac.Factors, ac.TOTP = store, totp
	id, origins, err := cfg.RelyingParty()
	if err != nil || id == "" {
		// Derived from a public URL browsers offer no passkey on (set
		// ones were checked when the settings were read).
		logger.Warn().Str("public_url", cfg.Mail.PublicURL).Msg("passkeys are off: set SHELF_WEBAUTHN_RP_ID (a domain name) and SHELF_WEBAUTHN_ORIGINS to turn them on")
		return nil
	}
	passkeys, err := factor.NewPasskeys(id, origins, issuer)
	if err != nil {
		return err
	}
	ac.Passkeys = passkeys
	return nil
}
