package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/rs/zerolog"
	"github.com/scylladb/gocqlx/v2"

	"shelf/internal/config"
	"shelf/internal/metrics"
	"shelf/repository"
)

const usage = `usage: api <command>

commands:
  serve    apply migrations (unless SHELF_MIGRATE_ON_START=false) and serve the HTTP API
  migrate  create the keyspace if needed and apply the schema migrations
  admin    grant|revoke <username-or-email>: manage admins
  help     this text

Settings come from SHELF_* environment variables; see the README.`

// run is the whole program; main only adds the signal context and the exit code.
func run(ctx context.Context, args []string, getenv func(string) string) error {
	return runWithOutput(ctx, args, getenv, os.Stdout)
}

// runWithOutput is run with the operator commands' output sent to out.
func runWithOutput(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Println(usage)
		if len(args) == 0 {
			return errors.New("no command given")
		}
		return nil
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	logger := newLogger(cfg.Log, os.Stdout)
	switch args[0] {
	case "serve":
		return serve(ctx, cfg, logger)
	case "migrate":
		return migrate(ctx, cfg, logger)
	case "admin":
		// Operator output goes to stdout; the log only says what went wrong.
		return admin(ctx, cfg, logger.Level(zerolog.WarnLevel), args[1:], out)
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
}

// newLogger builds the process logger: JSON lines, or colored console
// output for people.
func newLogger(c config.Log, out io.Writer) zerolog.Logger {
	if c.Format == "console" {
		out = zerolog.ConsoleWriter{Out: out, TimeFormat: "15:04:05.000"}
	}
	// Millisecond RFC 3339 timestamps in UTC, as the API's own are.
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
	level, err := zerolog.ParseLevel(c.Level)
	if err != nil {
		level = zerolog.InfoLevel
	}
	return zerolog.New(out).Level(level).With().Timestamp().Logger()
}

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

// connConfig is the repository's view of the configuration.
func connConfig(cfg config.Config, logger zerolog.Logger) repository.ConnConfig {
	c := cfg.Cassandra
	return repository.ConnConfig{
		Hosts:             c.Hosts,
		Keyspace:          c.Keyspace,
		Consistency:       c.Consistency,
		SerialConsistency: c.SerialConsistency,
		Username:          c.Username,
		Password:          c.Password,
		Timeout:           c.Timeout,
		ConnectTimeout:    c.ConnectTimeout,
		ReconnectInterval: c.ReconnectInterval,
		Logger:            driverLogger{logger: logger.With().Str("component", "gocql").Logger()},
	}
}

// driverLogger sends gocql's messages to the process log as warnings: they
// are about connections failing and coming back.
type driverLogger struct{ logger zerolog.Logger }

func (d driverLogger) Print(v ...any)                 { d.logger.Warn().Msg(fmt.Sprint(v...)) }
func (d driverLogger) Printf(format string, v ...any) { d.logger.Warn().Msgf(format, v...) }
func (d driverLogger) Println(v ...any)               { d.logger.Warn().Msg(fmt.Sprint(v...)) }

// migrate creates the keyspace if needed and applies every pending schema file.
func migrate(ctx context.Context, cfg config.Config, logger zerolog.Logger) error {
	logConfig(logger, cfg)
	session, err := connect(ctx, cfg, logger, true)
	if err != nil {
		return err
	}
	session.Close()
	return nil
}

// connect opens the session serve and the admin commands use. With
// applySchema it first creates the keyspace (with the configured
// replication) and then applies pending migrations on the same session.
func connect(ctx context.Context, cfg config.Config, logger zerolog.Logger, applySchema bool) (gocqlx.Session, error) {
	return connectObserved(ctx, cfg, logger, applySchema, nil)
}

// connectObserved is connect with every statement reported to m (if set).
func connectObserved(ctx context.Context, cfg config.Config, logger zerolog.Logger, applySchema bool, m *metrics.Metrics) (gocqlx.Session, error) {
	conn := connConfig(cfg, logger)
	if m != nil {
		conn.Observer, conn.BatchObserver = m, m
	}
	wait := cfg.Cassandra.ConnectWait
	if applySchema {
		if err := repository.EnsureKeyspace(ctx, conn, cfg.Cassandra.Replication.CQL(), wait); err != nil {
			return gocqlx.Session{}, err
		}
	}
	session, err := repository.Connect(ctx, conn, wait)
	if err != nil {
		return gocqlx.Session{}, err
	}
	if applySchema {
		if err := repository.Migrate(ctx, session); err != nil {
			session.Close()
			return gocqlx.Session{}, err
		}
		logger.Info().Str("keyspace", cfg.Cassandra.Keyspace).Msg("schema is up to date")
	}
	return session, nil
}
