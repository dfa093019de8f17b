package app

import (
	"time"

	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/internal/config"
	"shelf/repository"
)

// Option changes what New, Serve and Admin wire. The server (cmd/api)
// passes none; the proof wing passes its own: its deliberately broken
// builds (tests/broken, each a main of its own), the skewed-clock build
// (tests/nemesis/skewedapi) and the end-to-end tests, so the sabotage
// wraps the composition root from outside and no build of this package
// carries it.
type Option func(*wiring)

// wiring is what the options may change, each with the server's default.
type wiring struct {
	stores func(db *repository.DB, s Stores) Stores
	serial SerialRule
	// clockOffset shifts the process's clock (ClockOffset).
	clockOffset time.Duration
	// accountsBackground runs the accounts service's work after the
	// answer (domain.InGoroutine; AccountsBackground).
	accountsBackground func(func())
	// moderationClock makes moderation's clock from the process's (nil:
	// the process's; ModerationClock).
	moderationClock func(process func() time.Time) func() time.Time
	// turnWait is how long a membership change waits for its turn at its
	// group's row before it goes ahead (groups.DefaultTurnWait;
	// GroupTurnWait).
	turnWait time.Duration
	// changeGrace is how old an interrupted membership change's entry is
	// before the jobs' worker finishes it (0: lifecycle's; ChangeGrace).
	changeGrace time.Duration
}

func wiringOf(opts []Option) wiring {
	w := wiring{stores: func(_ *repository.DB, s Stores) Stores { return s }, serial: checkedSerial,
		accountsBackground: domain.InGoroutine, turnWait: groups.DefaultTurnWait}
	for _, o := range opts {
		o(&w)
	}
	return w
}

// Stores are the stores New builds that an Option may replace before any
// service gets them.
type Stores struct {
	// Users is the accounts service's user store.
	Users accounts.UserStore
	// Groups is the groups service's group store.
	Groups groups.Store
	// Claims is the claim store of the accounts and groups services.
	Claims domain.ClaimStore
}

// WithStores has wrap replace the repository's stores (and decorate db,
// whose Sender it may wrap) before the services are built.
func WithStores(wrap func(db *repository.DB, s Stores) Stores) Option {
	return func(w *wiring) { w.stores = wrap }
}

// ClockOffset runs the process's clock (the one New hands every service
// and the stores: leases, write timestamps, lastModified) d ahead of the
// machine's, or behind it for a negative d: tests of clock skew between
// instances run one so (tests/nemesis/skewedapi). The HTTP layer (rate
// limits, timeouts) keeps the machine's clock.
func ClockOffset(d time.Duration) Option {
	return func(w *wiring) { w.clockOffset = d }
}

// AccountsBackground has run, in place of a goroutine, run the work the
// accounts service leaves for after an answer (mail, recording when a
// session was seen): end-to-end tests run it inside the request, so that
// a request's mail has been sent when it answers.
func AccountsBackground(run func(func())) Option {
	return func(w *wiring) { w.accountsBackground = run }
}

// ModerationClock gives moderation a clock of its own, made by clock from
// the process's: tests that spread suspensions over months of buckets
// move it while every other clock (the stores' write timestamps among
// them) stays on time.
func ModerationClock(clock func(process func() time.Time) func() time.Time) Option {
	return func(w *wiring) { w.moderationClock = clock }
}

// GroupTurnWait sets how long a membership change waits for its turn at
// its group's row (groups.Config.TurnWait) while the queue does not move:
// a test of many joins at once under -race, where one turn may stall for
// a second, waits longer than the server's default.
func GroupTurnWait(d time.Duration) Option {
	return func(w *wiring) { w.turnWait = d }
}

// ChangeGrace sets how old the entry of an interrupted membership change
// must be, by the worker's clock and the node's both, before the jobs'
// worker finishes it (lifecycle.Config.ChangeGrace): a test that cannot
// wait the minute of the server's default.
func ChangeGrace(d time.Duration) Option {
	return func(w *wiring) { w.changeGrace = d }
}

// SerialRule is the serial consistency every compare-and-set and SERIAL
// read of the process runs at on a keyspace of this replication in a
// cluster of these data centres, or why the settings are refused for it.
type SerialRule func(c config.Cassandra, keyspace string, replication map[string]string, clusterDCs []string, logger zerolog.Logger) (string, error)

// WithSerialRule has rule decide the serial consistency in place of the
// settings' own check (config.Cassandra.CheckReplication).
func WithSerialRule(rule SerialRule) Option {
	return func(w *wiring) { w.serial = rule }
}

// checkedSerial is the server's rule: the serial consistency the settings
// give on a keyspace of this replication, or why they are refused.
func checkedSerial(c config.Cassandra, keyspace string, replication map[string]string, clusterDCs []string, _ zerolog.Logger) (string, error) {
	return c.CheckReplication(keyspace, replication, clusterDCs)
}
