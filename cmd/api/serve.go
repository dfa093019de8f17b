package main

import (
	"context"
	"errors"
	"fmt"
	"net"
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

// serve connects to Cassandra (migrating first unless switched off), builds
// the router and serves until ctx ends, then drains in-flight requests.
func serve(ctx context.Context, cfg config.Config, logger zerolog.Logger) error {
	logConfig(logger, cfg)
	m := metrics.New()
	session, err := connectObserved(ctx, cfg, logger, cfg.MigrateOnStart, m)
	if err != nil {
		return err
	}
	defer session.Close()
	a, err := newAppWithMetrics(cfg, logger, session, m)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (SHELF_HTTP_ADDR): %w", cfg.HTTP.Addr, err)
	}
	logger.Info().Str("addr", ln.Addr().String()).Str("url", publicURL(ln.Addr())).Msg("shelf is serving")
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go sweep(sweepCtx, a.moderation, cfg.Moderation.SweepInterval, logger)
	go drainOutbox(sweepCtx, a.contents, cfg.Content, a.metrics, logger)
	return serveHTTP(ctx, ln, a.router, cfg.HTTP, logger)
}

// app is the wired service: stores, domain services and the router.
type app struct {
	db         *repository.DB
	accounts   *domain.Accounts
	moderation *domain.Moderation
	groups     *domain.Groups
	contents   *domain.Contents
	metrics    *metrics.Metrics
	router     http.Handler
}

// newApp wires the repository into the domain and the domain into the HTTP
// layer, with metrics of its own.
func newApp(cfg config.Config, logger zerolog.Logger, session gocqlx.Session) (*app, error) {
	return newAppWithMetrics(cfg, logger, session, metrics.New())
}

// newAppWithMetrics is newApp reporting to m (whose CQL observer the
// session was opened with, in serve).
func newAppWithMetrics(cfg config.Config, logger zerolog.Logger, session gocqlx.Session, m *metrics.Metrics) (*app, error) {
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
	return &app{db: db, accounts: accounts, moderation: moderation, groups: groups, contents: contents,
		metrics: m, router: router}, nil
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

// sweep lifts ended suspensions every interval until ctx ends. Every
// instance runs one; lifting is a compare-and-set, so they never clash.
func sweep(ctx context.Context, m *domain.Moderation, interval time.Duration, logger zerolog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			lifted, err := m.SweepExpired(ctx, 100)
			if err != nil && ctx.Err() == nil {
				logger.Warn().Err(err).Msg("suspension sweep")
			}
			if lifted > 0 {
				logger.Info().Int("lifted", lifted).Msg("ended suspensions lifted")
			}
			if lifted < 100 || err != nil {
				break
			}
		}
	}
}

// drainOutbox finishes fan-outs that stopped part-way (a crash, a failed
// write) every interval until ctx ends. Every instance runs one; fan-out
// writes are idempotent, so they never clash.
func drainOutbox(ctx context.Context, c *domain.Contents, cfg config.Content, m *metrics.Metrics, logger zerolog.Logger) {
	t := time.NewTicker(cfg.OutboxInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		done, err := c.DrainOutbox(ctx, cfg.OutboxGrace, 100)
		if err != nil && ctx.Err() == nil {
			logger.Warn().Err(err).Msg("outbox")
		}
		if done > 0 {
			logger.Info().Int("completed", done).Msg("unfinished fan-outs completed")
		}
		if items, oldest, err := c.OutboxBacklog(ctx); err == nil {
			m.OutboxItems.Set(float64(items))
			m.OutboxAge.Set(oldest.Seconds())
		}
	}
}

// serveHTTP runs the server on ln until ctx ends, then stops accepting and
// waits up to ShutdownTimeout for in-flight requests to finish.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, c config.HTTP, logger zerolog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info().Dur("timeout", c.ShutdownTimeout).Msg("shutting down: draining in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info().Msg("stopped")
	return nil
}

// publicURL is the address to print for people: localhost for a wildcard.
func publicURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsUnspecified() {
		if ok {
			return fmt.Sprintf("http://localhost:%d", tcp.Port)
		}
		return "http://" + addr.String()
	}
	return "http://" + addr.String()
}
