// Package app wires shelf together: the Cassandra session, the repository,
// the domain services and the HTTP router, and runs them (serve, migrate,
// the operator commands). cmd/api parses the command line and calls it;
// end-to-end tests (tests/e2e) build the same App the server runs.
package app

import (
	"context"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/scylladb/gocqlx/v2"

	"shelf"
	"shelf/domain"
	"shelf/handlers"
	"shelf/internal/config"
	"shelf/internal/metrics"
	"shelf/internal/password"
	"shelf/repository"
)

// App is the wired service: stores, domain services and the router.
type App struct {
	DB         *repository.DB
	Accounts   *domain.Accounts
	Moderation *domain.Moderation
	Groups     *domain.Groups
	Contents   *domain.Contents
	Metrics    *metrics.Metrics
	Router     http.Handler
}

// New wires the repository into the domain and the domain into the HTTP
// layer on session. Metrics go to m (the session's CQL observer, when it
// was opened with one by Connect); nil gives the app metrics of its own.
func New(cfg config.Config, logger zerolog.Logger, session gocqlx.Session, m *metrics.Metrics) (*App, error) {
	if m == nil {
		m = metrics.New()
	}
	ready, err := repository.NewReadiness(session)
	if err != nil {
		return nil, err
	}
	db := repository.NewDB(session, cfg.Cassandra.SerialConsistency)
	db.OnLWT = func(outcome string) { m.LWTOutcomes.WithLabelValues(outcome).Inc() }
	accounts := newAccounts(cfg, logger, db, m)
	moderation := domain.NewModeration(domain.ModerationConfig{BucketSize: cfg.Moderation.BucketSize},
		accounts, repository.NewSuspensions(db))
	groups := domain.NewGroups(domain.GroupsConfig{ClaimLease: cfg.Accounts.ClaimLease},
		accounts, repository.NewGroups(db), repository.NewGroupMembers(db))
	contents := domain.NewContents(domain.ContentConfig{
		SyncFanoutLimit: cfg.Content.SyncFanoutLimit, FanoutConcurrency: cfg.Content.FanoutConcurrency,
	}, accounts, groups, repository.NewContents(db), repository.NewContentMembers(db),
		repository.NewLibraries(db), repository.NewOutbox(db))
	router := handlers.NewRouter(handlers.Deps{
		Logger:             logger,
		Ready:              ready,
		OpenAPI:            shelf.OpenAPI,
		MaxBodyBytes:       cfg.HTTP.MaxBodyBytes,
		RequestTimeout:     cfg.HTTP.RequestTimeout,
		TrustedProxies:     cfg.HTTP.TrustedProxies,
		Accounts:           accounts,
		RateLimitPerMinute: cfg.Accounts.RateLimitPerMinute,
		Moderation:         moderation,
		Groups:             groups,
		Contents:           contents,
		Metrics:            m,
		CORSOrigins:        cfg.HTTP.CORSOrigins,
	})
	return &App{DB: db, Accounts: accounts, Moderation: moderation, Groups: groups, Contents: contents,
		Metrics: m, Router: router}, nil
}

// newAccounts builds the accounts service on db.
func newAccounts(cfg config.Config, logger zerolog.Logger, db *repository.DB, m *metrics.Metrics) *domain.Accounts {
	c := cfg.Accounts
	hasher := password.New(password.Params{
		MemoryKiB: uint32(c.Argon2MemoryKiB), Time: uint32(c.Argon2Time), Threads: uint8(c.Argon2Threads),
	}, c.HashConcurrency)
	hasher.OnWait(func(d time.Duration) { m.HashWait.Observe(d.Seconds()) })
	return domain.NewAccounts(
		domain.AccountsConfig{ClaimLease: c.ClaimLease, SessionTTL: c.SessionTTL},
		repository.NewClaims(db), repository.NewUsers(db), repository.NewSessions(db),
		hasher, domainLogger{logger},
	)
}

// domainLogger lets the domain log through zerolog without importing it.
type domainLogger struct{ logger zerolog.Logger }

func (d domainLogger) Warn(ctx context.Context, msg string, kv ...string) {
	e := zerolog.Ctx(ctx).Warn()
	if zerolog.Ctx(ctx).GetLevel() == zerolog.Disabled {
		e = d.logger.Warn()
	}
	for i := 0; i+1 < len(kv); i += 2 {
		e = e.Str(kv[i], kv[i+1])
	}
	e.Msg(msg)
}
