// Command leanserver serves package lean's operations: the baseline `make
// bench` starts beside the api. It reads the api's own settings
// (SHELF_CASSANDRA_HOSTS, SHELF_KEYSPACE, SHELF_ARGON2_MEMORY_KIB,
// SHELF_ARGON2_TIME) and LEAN_ADDR, and prints "serving <addr>" once it
// listens.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"shelf/internal/password"
	"shelf/tests/bench/lean"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "leanserver:", err)
		os.Exit(1)
	}
}

func run() error {
	cluster := gocql.NewCluster(strings.Split(os.Getenv("SHELF_CASSANDRA_HOSTS"), ",")...)
	cluster.Keyspace = os.Getenv("SHELF_KEYSPACE")
	// As shelf connects: LOCAL_QUORUM, token-aware, writes sent at once.
	cluster.Consistency = gocql.LocalQuorum
	cluster.SerialConsistency = gocql.LocalSerial
	cluster.Timeout = 5 * time.Second
	cluster.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	cluster.WriteCoalesceWaitTime = 0
	s, err := cluster.CreateSession()
	if err != nil {
		return err
	}
	defer s.Close()
	params := password.DefaultParams
	if v, err := strconv.Atoi(os.Getenv("SHELF_ARGON2_MEMORY_KIB")); err == nil {
		params.MemoryKiB = uint32(v)
	}
	if v, err := strconv.Atoi(os.Getenv("SHELF_ARGON2_TIME")); err == nil {
		params.Time = uint32(v)
	}
	ln, err := net.Listen("tcp", os.Getenv("LEAN_ADDR"))
	if err != nil {
		return err
	}
	fmt.Println("serving", ln.Addr())
	return http.Serve(ln, lean.Handler(&lean.Store{S: s, Hasher: password.New(params, 0)}))
}
