package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gocql/gocql"
	"github.com/rs/zerolog"
	"github.com/scylladb/gocqlx/v2"

	"shelf/internal/config"
	"shelf/internal/metrics"
	"shelf/repository"
)

// Migrate creates the keyspace if needed and applies every pending schema file.
func Migrate(ctx context.Context, cfg config.Config, logger zerolog.Logger) error {
	logConfig(logger, cfg)
	session, err := Connect(ctx, cfg, logger, true, nil)
	if err != nil {
		return err
	}
	session.Close()
	return nil
}

// Connect opens the session serve and the operator commands use, every
// statement reported to m when it is set. With applySchema it first
// creates the keyspace (with the configured replication) and applies
// pending migrations, on a session of their own whose statements may take
// SHELF_CASSANDRA_SCHEMA_TIMEOUT (a schema change waits for the nodes to
// agree; the serving session's attempts are short).
func Connect(ctx context.Context, cfg config.Config, logger zerolog.Logger, applySchema bool, m *metrics.Metrics) (gocqlx.Session, error) {
	conn := waitingConn(cfg, logger)
	wait := cfg.Cassandra.ConnectWait
	if applySchema {
		if err := applySchemaWith(ctx, cfg, conn); err != nil {
			return gocqlx.Session{}, unreachableHint(err)
		}
		logger.Info().Str("keyspace", cfg.Cassandra.Keyspace).Msg("schema is up to date")
	}
	if m != nil {
		o := statementObserver{metrics: m, slow: cfg.Cassandra.SlowLog, logger: logger.With().Str("component", "cql").Logger()}
		conn.Observer, conn.BatchObserver = o, o
	}
	session, err := repository.Connect(ctx, conn, wait)
	return session, unreachableHint(err)
}

// waitingConn is connConfig that says, at the first attempt that finds
// no node, that start-up waits and for how long.
func waitingConn(cfg config.Config, logger zerolog.Logger) repository.ConnConfig {
	conn := connConfig(cfg, logger)
	conn.Waiting = func(err error) {
		logger.Warn().Strs("hosts", cfg.Cassandra.Hosts).Str("error", err.Error()).
			Msgf("Cassandra does not answer yet; trying again for up to %s (SHELF_CASSANDRA_CONNECT_WAIT)", cfg.Cassandra.ConnectWait)
	}
	return conn
}

// unreachableHint adds what to do next to a connection the wait gave up
// on: see whether the node runs, start the local one, or name another.
func unreachableHint(err error) error {
	if !errors.Is(err, repository.ErrUnreachable) {
		return err
	}
	return fmt.Errorf("%w; is Cassandra running at SHELF_CASSANDRA_HOSTS? make cassandra-status says whether the local node runs and make cassandra-up starts it; "+
		"for another cluster set SHELF_CASSANDRA_HOSTS (and SHELF_CASSANDRA_USERNAME and SHELF_CASSANDRA_PASSWORD if it asks for them)", err)
}

// connectChecked opens the serving session once the start-up check of the
// regions (checkRegions, with rule) passed on the keyspace as it is, and
// only then, with migrate, applies pending migrations: a process the check
// refuses (a region's settings wrong) leaves the deployment's keyspace as
// it found it (TestARefusedStartMigratesNothing). A keyspace not there yet
// is made and migrated first with migrate (its replication is the
// settings'), and checked as made; without migrate it is refused, naming
// the setting and `api migrate`.
func connectChecked(ctx context.Context, cfg config.Config, logger zerolog.Logger, migrate bool, m *metrics.Metrics, rule SerialRule) (gocqlx.Session, config.Config, error) {
	keyspace := cfg.Cassandra.Keyspace
	exists, err := repository.KeyspaceExists(ctx, waitingConn(cfg, logger), cfg.Cassandra.ConnectWait)
	if err != nil {
		return gocqlx.Session{}, cfg, unreachableHint(err)
	}
	if !exists && !migrate {
		return gocqlx.Session{}, cfg, fmt.Errorf("keyspace %s (SHELF_KEYSPACE) does not exist on %s: check the setting, or make it with `api migrate`", keyspace, strings.Join(cfg.Cassandra.Hosts, ","))
	}
	session, err := Connect(ctx, cfg, logger, !exists, m)
	if err != nil {
		return gocqlx.Session{}, cfg, err
	}
	checked, err := checkRegions(ctx, cfg, session, logger, rule)
	if err == nil && exists && migrate {
		if err = applySchemaWith(ctx, cfg, connConfig(cfg, logger)); err == nil {
			logger.Info().Str("keyspace", keyspace).Msg("schema is up to date")
		}
	}
	if err != nil {
		session.Close()
		return gocqlx.Session{}, cfg, err
	}
	return session, checked, nil
}

// applySchemaWith creates the keyspace and migrates it on a session with
// the schema timeout.
func applySchemaWith(ctx context.Context, cfg config.Config, conn repository.ConnConfig) error {
	conn.Timeout = max(conn.Timeout, cfg.Cassandra.SchemaTimeout)
	wait := cfg.Cassandra.ConnectWait
	if err := repository.EnsureKeyspace(ctx, conn, cfg.Cassandra.Replication.CQL(), wait); err != nil {
		return err
	}
	session, err := repository.Connect(ctx, conn, wait)
	if err != nil {
		return err
	}
	defer session.Close()
	return repository.Migrate(ctx, session)
}

// connConfig is the repository's view of the configuration.
func connConfig(cfg config.Config, logger zerolog.Logger) repository.ConnConfig {
	c := cfg.Cassandra
	return repository.ConnConfig{
		Hosts:             c.Hosts,
		Keyspace:          c.Keyspace,
		Consistency:       c.Consistency,
		LocalDC:           c.LocalDC,
		Username:          c.Username,
		Password:          c.Password,
		Timeout:           c.Timeout,
		ConnectTimeout:    c.ConnectTimeout,
		ReconnectInterval: c.ReconnectInterval,
		Retries:           c.Retries,
		SpeculativeCopies: c.SpeculativeCopies,
		SpeculativeDelay:  c.SpeculativeDelay,
		TimeoutLimit:      c.TimeoutLimit,
		Logger:            driverLogger{logger: logger.With().Str("component", "gocql").Logger()},
	}
}

// statementObserver reports every attempt of a statement to the metrics,
// and logs an attempt that took at least slow (SHELF_CASSANDRA_SLOW_LOG)
// with the node it went to: a request that waited seconds says on what.
// The statement's text carries no values (they are bound).
type statementObserver struct {
	metrics *metrics.Metrics
	slow    time.Duration
	logger  zerolog.Logger
}

// ObserveQuery implements gocql.QueryObserver.
func (o statementObserver) ObserveQuery(ctx context.Context, q gocql.ObservedQuery) {
	o.metrics.ObserveQuery(ctx, q)
	if took := q.End.Sub(q.Start); o.isSlow(took) {
		o.logSlow(metrics.StatementKind(q.Statement), q.Statement, q.Host, q.Attempt, took, q.Err)
	}
}

// ObserveBatch implements gocql.BatchObserver.
func (o statementObserver) ObserveBatch(ctx context.Context, b gocql.ObservedBatch) {
	o.metrics.ObserveBatch(ctx, b)
	first := ""
	if len(b.Statements) > 0 {
		first = b.Statements[0]
	}
	if took := b.End.Sub(b.Start); o.isSlow(took) {
		o.logSlow("batch", first, b.Host, b.Attempt, took, b.Err)
	}
}

// isSlow reports whether an attempt that took took is logged.
func (o statementObserver) isSlow(took time.Duration) bool { return o.slow > 0 && took >= o.slow }

func (o statementObserver) logSlow(kind, stmt string, host *gocql.HostInfo, attempt int, took time.Duration, err error) {
	e := o.logger.Warn().Str("kind", kind).Str("statement", shorten(stmt, 160)).
		Int("attempt", attempt).Float64("durationMs", float64(took.Microseconds())/1000)
	if host != nil {
		e = e.Str("node", host.ConnectAddress().String())
	}
	if err != nil {
		e = e.Str("error", err.Error())
	}
	e.Msg("slow statement")
}

// shorten puts s on one line (each run of white space one space) and cuts
// it to its first n bytes at most, on a rune boundary, with "…" after a
// cut.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// driverLogger sends gocql's messages to the process log as warnings: they
// are about connections failing and coming back.
type driverLogger struct{ logger zerolog.Logger }

func (d driverLogger) Print(v ...any)                 { d.logger.Warn().Msg(fmt.Sprint(v...)) }
func (d driverLogger) Printf(format string, v ...any) { d.logger.Warn().Msgf(format, v...) }
func (d driverLogger) Println(v ...any)               { d.logger.Warn().Msg(fmt.Sprint(v...)) }

// logConfig logs the effective configuration once at start, secrets masked.
func logConfig(logger zerolog.Logger, cfg config.Config) {
	fields := cfg.Fields()
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	dict := zerolog.Dict()
	for _, name := range names {
		dict = dict.Str(name, fields[name])
	}
	logger.Info().Dict("config", dict).Msg("effective configuration")
}
