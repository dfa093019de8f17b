package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"shelf/internal/config"
	"shelf/internal/logbuf"
)

const usage = `usage: api <command>

commands:
  serve    apply migrations (unless SHELF_MIGRATE_ON_START=false) and serve the HTTP API
  migrate  create the keyspace if needed and apply the schema migrations
  admin    grant|revoke <username-or-email>, repair-suspensions [--dry-run] [--from <position>], repair-deletions [--dry-run], repair-closings [--dry-run], index-users [--dry-run]: operator commands
  help     this text

Settings come from SHELF_* environment variables; see docs/configuration.md.`

// Main is the program of cmd/api, and, with their opts, of the proof
// wing's builds (tests/broken/*, tests/nemesis/skewedapi): Run on the
// command line and the environment, under a context that SIGINT and
// SIGTERM end, with os.Stdout as out, and exit 1 when it fails.
func Main(opts ...Option) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Getenv, os.Stdout, opts...)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

// Run is the whole program; Main only adds the signal context, the exit
// code and os.Stdout as out (where the log and the operator commands'
// output go). opts change the wiring (options.go); the server passes none.
func Run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, opts ...Option) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(out, usage)
		if len(args) == 0 {
			return errors.New("no command given")
		}
		return nil
	}
	if (args[0] == "serve" || args[0] == "migrate") && len(args) > 1 {
		// Nothing after them is read: an argument meant something to
		// whoever typed it (migrate --dry-run is no dry run).
		return fmt.Errorf("%s takes no arguments (given %q)\n%s", args[0], args[1:], usage)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	if args[0] == "serve" && cfg.Log.FlushInterval > 0 {
		// One write of many lines now and then, not one per request.
		buffered := logbuf.New(out, cfg.Log.FlushInterval)
		defer buffered.Close()
		out = buffered
	}
	logger := newLogger(cfg.Log, out)
	switch args[0] {
	case "serve":
		tuneGC(getenv)
		return Serve(ctx, cfg, logger, opts...)
	case "migrate":
		return Migrate(ctx, cfg, logger)
	case "admin":
		// Operator output goes to out; the log only says what went wrong.
		return Admin(ctx, cfg, logger.Level(zerolog.WarnLevel), args[1:], out, opts...)
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
}

// gcPercent is the collector's target heap growth unless GOGC says
// otherwise: shelf's live heap is a few MB, so letting it grow to five times
// that before collecting costs some memory (peak RSS 47 MB instead of
// 33) and cuts the collector's share of the API's CPU under load
// (docs/benchmarks.md).
const gcPercent = 400

// tuneGC sets gcPercent when GOGC is not set.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// timestamps sets zerolog's time settings once.
var timestamps sync.Once

// newLogger builds the process logger: JSON lines, or colored console
// output for people.
func newLogger(c config.Log, out io.Writer) zerolog.Logger {
	if c.Format == "console" {
		out = zerolog.ConsoleWriter{Out: out, TimeFormat: "15:04:05.000"}
	}
	// Millisecond RFC 3339 timestamps in UTC, as the API's own are:
	// zerolog's settings are the process's, set once (tests run the
	// command in parallel).
	timestamps.Do(func() {
		zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
		zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
	})
	level, err := zerolog.ParseLevel(c.Level)
	if err != nil {
		level = zerolog.InfoLevel
	}
	return zerolog.New(out).Level(level).With().Timestamp().Logger()
}
