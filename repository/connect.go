package repository

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"weak"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
)

// ConnConfig is what a connection needs; internal/app fills it from config.
type ConnConfig struct {
	Hosts    []string
	Keyspace string
	// Consistency is that of every statement but the Paxos rounds
	// (LOCAL_QUORUM by default; a compare-and-set's commit too).
	Consistency string
	// SerialConsistency is the session's default scope of Paxos rounds:
	// SERIAL, LOCAL_SERIAL, or empty for the server's (SERIAL). The
	// repository's own compare-and-sets and SERIAL reads never rely on it
	// (DB.Serial, per statement); tests and benchmarks that send their own
	// do.
	SerialConsistency string
	// LocalDC, when set, is the data centre this process lives in: plans
	// start with its replicas, then its other nodes, and reach another
	// data centre's nodes only after those (hostSelection).
	LocalDC           string
	Username          string
	Password          string
	Timeout           time.Duration
	ConnectTimeout    time.Duration
	ReconnectInterval time.Duration
	// Retries is how often an idempotent statement is sent again after a
	// node could not answer, each time to the next node (retryIdempotent).
	Retries int
	// SpeculativeCopies and SpeculativeDelay: an idempotent statement
	// unanswered after the delay is also sent to the next node, up to that
	// many copies (speculation); 0 copies is off.
	SpeculativeCopies int
	SpeculativeDelay  time.Duration
	// Waiting, when set, is told of the first failed attempt to reach the
	// cluster that will be tried again: start-up's wait for a node still
	// starting says it is waiting.
	Waiting func(err error)
	// TimeoutLimit closes a connection once more statements than that
	// timed out on it (gocql.TimeoutLimit; 0: never). Process-wide: the
	// first session opened sets it (setTimeoutLimit).
	TimeoutLimit int
	// Logger receives the driver's own messages (connection errors and the
	// like); nil discards them.
	Logger gocql.StdLogger
	// Observer, when set, sees every statement (metrics; tests count reads).
	Observer gocql.QueryObserver
	// BatchObserver, when set, sees every batch.
	BatchObserver gocql.BatchObserver
	// AddressTranslator, when set, maps the addresses nodes give for
	// themselves to the ones this process reaches them at (NAT, a proxy).
	AddressTranslator gocql.AddressTranslator
}

// clusterConfig builds the gocql configuration shared by every session:
// token-aware routing (in the local data centre, when set), the configured
// consistency, a short
// reconnect interval so a node that comes back is used again within
// seconds, and the attempts of idempotent statements (attemptsConfig).
func clusterConfig(c ConnConfig) (*gocql.ClusterConfig, error) {
	cluster := gocql.NewCluster(c.Hosts...)
	consistency, err := gocql.ParseConsistencyWrapper(c.Consistency)
	if err != nil {
		return nil, fmt.Errorf("consistency %q: %w", c.Consistency, err)
	}
	cluster.Consistency = consistency
	switch c.SerialConsistency {
	case "SERIAL":
		cluster.SerialConsistency = gocql.Serial
	case "LOCAL_SERIAL":
		cluster.SerialConsistency = gocql.LocalSerial
	case "":
	default:
		return nil, fmt.Errorf("serial consistency %q is not SERIAL or LOCAL_SERIAL", c.SerialConsistency)
	}
	cluster.Timeout = c.Timeout
	cluster.ConnectTimeout = c.ConnectTimeout
	cluster.ReconnectInterval = c.ReconnectInterval
	cluster.Logger = c.Logger
	cluster.QueryObserver = c.Observer
	cluster.BatchObserver = c.BatchObserver
	cluster.AddressTranslator = c.AddressTranslator
	if cluster.Logger == nil {
		cluster.Logger = discardLogger{}
	}
	cluster.PoolConfig.HostSelectionPolicy = newHealthPolicy(hostSelection(c.LocalDC), cluster) // after the observers: it wraps them
	// gocql holds writes up to 200µs to coalesce them into one syscall; on
	// this project's two-core machines that timer cost a single read 1.7 ms
	// instead of 0.5 ms, and a request that waits on several reads in turn
	// pays it each time. Send at once.
	cluster.WriteCoalesceWaitTime = 0
	attemptsConfig(cluster, c)
	if c.Username != "" {
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: c.Username, Password: c.Password}
	}
	return cluster, nil
}

// hostSelection is the policy the health policy reorders: token-aware
// (a partition's replicas first), over round robin, or with a local data
// centre over gocql's DC-aware round robin, whose plans hold that data
// centre's hosts before any other's. The token-aware policy then skips
// the replicas in other data centres, so a statement waits on another
// region only once every local host is down or at the back of the plan
// (healthPolicy): with LOCAL_QUORUM, it is then that region's quorum that
// answers (docs/design/regions.md).
func hostSelection(localDC string) gocql.HostSelectionPolicy {
	if localDC == "" {
		return gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	}
	return gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy(localDC))
}

// EnsureKeyspace creates the keyspace with the given replication map (CQL,
// e.g. "{'class': 'SimpleStrategy', 'replication_factor': 1}") if it does
// not exist, retrying for up to wait while the cluster cannot be reached. An
// existing keyspace keeps its replication: changing it is an operator's
// decision (ALTER KEYSPACE, then repair).
func EnsureKeyspace(ctx context.Context, c ConnConfig, replication string, wait time.Duration) error {
	s, err := createSession(ctx, wait, c.Waiting, func() (*gocql.ClusterConfig, error) { return clusterConfig(c) })
	if err != nil {
		return err
	}
	defer s.Close()
	stmt := schemaCQL(fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", quoteIdent(c.Keyspace), replication))
	// A node busy with its first schema changes (just started, its cores
	// taken) can take longer than the client's timeout to answer; IF NOT
	// EXISTS makes sending it again harmless, and a first attempt landing
	// late as well. So a timeout is retried until wait has passed.
	deadline := time.Now().Add(wait)
	for {
		err := schemaChange(s, ctx, stmt).Exec()
		if err == nil {
			break
		}
		if !errors.Is(err, gocql.ErrTimeoutNoResponse) || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("create keyspace %s: %w", c.Keyspace, err)
		}
	}
	return s.AwaitSchemaAgreement(ctx)
}

// KeyspaceExists reports whether the cluster has c's keyspace, on a
// session of no keyspace, retrying for up to wait while the cluster
// cannot be reached.
func KeyspaceExists(ctx context.Context, c ConnConfig, wait time.Duration) (bool, error) {
	s, err := createSession(ctx, wait, c.Waiting, func() (*gocql.ClusterConfig, error) { return clusterConfig(c) })
	if err != nil {
		return false, err
	}
	defer s.Close()
	_, err = KeyspaceReplication(ctx, gocqlx.NewSession(s), c.Keyspace)
	if errors.Is(err, gocql.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// DropKeyspace removes a keyspace and everything in it (tests use it).
func DropKeyspace(ctx context.Context, c ConnConfig) error {
	s, err := createSession(ctx, 0, nil, func() (*gocql.ClusterConfig, error) { return clusterConfig(c) })
	if err != nil {
		return err
	}
	defer s.Close()
	return schemaChange(s, ctx, schemaCQL("DROP KEYSPACE IF EXISTS "+quoteIdent(c.Keyspace))).Exec()
}

// Connect opens a session on the keyspace, retrying for up to wait while the
// cluster cannot be reached (a node that is still starting).
func Connect(ctx context.Context, c ConnConfig, wait time.Duration) (gocqlx.Session, error) {
	var spec *speculation
	s, err := createSession(ctx, wait, c.Waiting, func() (*gocql.ClusterConfig, error) {
		cluster, err := clusterConfig(c)
		if err != nil {
			return nil, err
		}
		cluster.Keyspace = c.Keyspace
		spec = newSpeculation(c.SpeculativeCopies, c.SpeculativeDelay)
		cluster.HostFilter = spec
		return cluster, nil
	})
	if err != nil {
		return gocqlx.Session{}, err
	}
	speculations.Store(weak.Make(s), spec)
	return gocqlx.NewSession(s), nil
}

// createSession retries CreateSession once a second until it works or wait
// has passed, on a configuration build makes afresh for each attempt: its
// policies hold the state of the session they were given to (gocql panics
// when a token-aware policy is shared between sessions, a failed attempt's
// included). waiting, when not nil, is told of the first failure that
// will be tried again.
func createSession(ctx context.Context, wait time.Duration, waiting func(error), build func() (*gocql.ClusterConfig, error)) (*gocql.Session, error) {
	deadline := time.Now().Add(wait)
	for told := false; ; told = true {
		cluster, err := build()
		if err != nil {
			return nil, err
		}
		s, err := cluster.CreateSession()
		if err == nil {
			return s, nil
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("connect to %v: %w (%w)", cluster.Hosts, err, ErrUnreachable)
		}
		if waiting != nil && !told {
			waiting(err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// ErrUnreachable marks a connection that could not be made within the
// wait: no node answered, or none took the credentials.
var ErrUnreachable = errors.New("the wait for a node ran out")

// quoteIdent quotes a CQL identifier, as gocql does for USE.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// discardLogger drops the driver's messages.
type discardLogger struct{}

// Print drops a message.
func (discardLogger) Print(...any) {}

// Printf drops a message.
func (discardLogger) Printf(string, ...any) {}

// Println drops a message.
func (discardLogger) Println(...any) {}
