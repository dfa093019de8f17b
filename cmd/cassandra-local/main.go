// Command cassandra-local starts and stops the real Cassandra 5.0 nodes that
// shelf develops and tests against, fetched from Maven Central (no Docker).
//
//	cassandra-local up            one node on 127.0.0.1:9042 (reused if it answers)
//	cassandra-local down          stop it
//	cassandra-local status        say whether it runs and answers
//	cassandra-local cluster-up    three nodes on 127.0.0.1, .2, .3 that see each other
//	cassandra-local cluster-down  stop them
//	cassandra-local cluster-up DCS [PER_DC]
//	                              DCS data centres (dc1, dc2, ...) of PER_DC
//	                              nodes each (default 1): dc1 on 127.0.0.61
//	                              (.62, .63), dc2 on .71 (.72, .73), dc3 on
//	                              .81 (.82, .83); DCS 1 alone: the three
//	                              nodes above
//	cassandra-local cluster-down DCS [PER_DC]  stop them
//	cassandra-local fetch         only fetch the jars into the cache
//	cassandra-local with -- CMD   run CMD with a node: start one if none answers
//	                              on 127.0.0.1:9042 (none when
//	                              SHELF_TEST_CASSANDRA_HOSTS is set), and stop
//	                              it afterwards
//
// Environment: SHELF_CASSANDRA_VERSION, SHELF_CASSANDRA_CACHE,
// SHELF_CASSANDRA_DATA, SHELF_CASSANDRA_HEAP (see docs/development.md#the-launcher).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"shelf/tools/localcassandra"
)

const usage = "usage: cassandra-local up|down|status|cluster-up [DCS [PER_DC]]|cluster-down [DCS [PER_DC]]|fetch|with -- CMD [ARGS]"

// clusterAddresses are the three loopback addresses of cluster mode.
var clusterAddresses = [3]string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cassandra-local:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || (len(args) != 1 && args[0] != "with" && !strings.HasPrefix(args[0], "cluster-")) {
		return errors.New(usage)
	}
	root, err := localcassandra.RepoRoot()
	if err != nil {
		return err
	}
	l, err := localcassandra.FromEnv(root)
	if err != nil {
		return err
	}
	single := localcassandra.SingleNode()
	cluster := localcassandra.ClusterNodes("cluster", clusterAddresses)
	var dcs [][]string
	if strings.HasPrefix(args[0], "cluster-") {
		if dcs, err = dataCentres(args[1:]); err != nil {
			return err
		}
		if dcs != nil {
			cluster = localcassandra.DataCentreNodes("dcs", dcs, nil)
		}
	}
	switch args[0] {
	case "up":
		return l.Start(ctx, single)
	case "down":
		return l.Stop(single)
	case "status":
		return status(ctx, l, single)
	case "cluster-up":
		if dcs != nil {
			// Addresses of their own: the single node may keep running.
			if err := l.StartCluster(ctx, cluster); err != nil {
				return err
			}
			printDataCentres(cluster)
			return nil
		}
		if l.Running(single) {
			return errors.New("the single node runs on 127.0.0.1; run `make cassandra-down` before `make cluster-up`")
		}
		return l.StartCluster(ctx, cluster)
	case "cluster-down":
		var errs []error
		for _, n := range cluster {
			errs = append(errs, l.Stop(n))
		}
		return errors.Join(errs...)
	case "with":
		return with(ctx, l, single, args[1:])
	case "fetch":
		lib, err := l.EnsureLib(ctx)
		if err == nil {
			fmt.Println(lib)
		}
		return err
	default:
		return errors.New(usage)
	}
}

// dataCentres reads cluster-up's and cluster-down's DCS and PER_DC
// arguments into the addresses of each data centre's nodes; nil (no
// arguments, or DCS 1 without PER_DC) is the three-node cluster.
func dataCentres(args []string) ([][]string, error) {
	switch {
	case len(args) > 2:
		return nil, errors.New(usage)
	case len(args) == 0:
		return nil, nil
	}
	count := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 3 {
			return 0, fmt.Errorf("%q: want 1, 2 or 3 (the machine runs a JVM a node)", s)
		}
		return n, nil
	}
	n, err := count(args[0])
	if err != nil {
		return nil, err
	}
	per := 1
	if len(args) == 2 {
		if per, err = count(args[1]); err != nil {
			return nil, err
		}
	}
	if n == 1 && len(args) == 1 {
		return nil, nil
	}
	dcs := make([][]string, n)
	for i := range dcs {
		for j := range per {
			dcs[i] = append(dcs[i], fmt.Sprintf("127.0.0.%d", 61+10*i+j))
		}
	}
	return dcs, nil
}

// printDataCentres says where each data centre's nodes answer and how an
// API process in the first data centre is configured.
func printDataCentres(nodes []localcassandra.Node) {
	var order []string
	hosts := map[string][]string{}
	for _, n := range nodes {
		if hosts[n.DC] == nil {
			order = append(order, n.DC)
		}
		hosts[n.DC] = append(hosts[n.DC], n.Address)
	}
	factors := make([]string, len(order))
	for i, dc := range order {
		factors[i] = fmt.Sprintf("%s=%d", dc, len(hosts[dc]))
	}
	for _, dc := range order {
		fmt.Printf("%s: %s\n", dc, strings.Join(hosts[dc], ","))
	}
	fmt.Printf("an API process in %s: SHELF_CASSANDRA_HOSTS=%s SHELF_LOCAL_DC=%s SHELF_REPLICATION=NetworkTopologyStrategy:%s\n",
		order[0], strings.Join(hosts[order[0]], ","), order[0], strings.Join(factors, ","))
}

func status(ctx context.Context, l *localcassandra.Launcher, n localcassandra.Node) error {
	running := l.Running(n)
	answering := localcassandra.Answering(ctx, n.Address)
	fmt.Printf("%s: process running=%v, CQL on %s:%d answering=%v, log %s\n",
		n.Name, running, n.Address, localcassandra.CQLPort, answering, l.LogFile(n))
	if !answering {
		return errors.New("not answering")
	}
	return nil
}

// with runs a command with a node available. A node that already answers
// (or an explicit SHELF_TEST_CASSANDRA_HOSTS) is used and left running; a
// node this command starts is stopped when the command ends. The command's
// exit code becomes ours.
func with(ctx context.Context, l *localcassandra.Launcher, n localcassandra.Node, args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return errors.New(usage)
	}
	started := false
	if os.Getenv("SHELF_TEST_CASSANDRA_HOSTS") == "" && !localcassandra.Answering(ctx, n.Address) {
		if err := l.Start(ctx, n); err != nil {
			return err
		}
		started = true
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	runErr := cmd.Run()
	if started {
		if err := l.Stop(n); err != nil {
			fmt.Fprintln(os.Stderr, "cassandra-local:", err)
		}
	}
	var exit *exec.ExitError
	if errors.As(runErr, &exit) {
		os.Exit(exit.ExitCode())
	}
	return runErr
}
