// Package localcassandra starts and stops real Apache Cassandra 5.0 nodes on
// this machine from the cassandra-all artifact on Maven Central, without
// Docker: one node for development and tests (SingleNode), a three-node
// cluster on the addresses given (ClusterNodes: make cluster-up's on
// 127.0.0.1-3, each cluster test's on addresses of its own), or a cluster
// of several data centres (DataCentreNodes). It is used by
// cmd/cassandra-local (and so by the Makefile) and by the test harness.
package localcassandra

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// DefaultVersion is the Cassandra release fetched when none is configured:
// the newest 5.0.x on Maven Central when this was written.
const DefaultVersion = "5.0.9"

// Launcher holds what every node needs: where the jars are cached, where
// node folders go, and how big a heap to give each node.
type Launcher struct {
	// Version of org.apache.cassandra:cassandra-all.
	Version string
	// CacheDir keeps the fetched jars; shared by every clone on the machine.
	CacheDir string
	// DataDir holds one folder per node (config, data, logs, pid).
	DataDir string
	// Heap is the -Xms/-Xmx of each node, e.g. "1G".
	Heap string
	// Log receives progress lines; nil means silent.
	Log io.Writer
}

// FromEnv builds a Launcher from SHELF_CASSANDRA_VERSION,
// SHELF_CASSANDRA_CACHE, SHELF_CASSANDRA_DATA and SHELF_CASSANDRA_HEAP, with
// defaults: DefaultVersion, shelf/ in the user's cache folder
// (~/.cache/shelf on Linux), <repoRoot>/.cassandra and 1G. Progress goes to
// stderr.
func FromEnv(repoRoot string) (*Launcher, error) {
	l := &Launcher{
		Version:  os.Getenv("SHELF_CASSANDRA_VERSION"),
		CacheDir: os.Getenv("SHELF_CASSANDRA_CACHE"),
		DataDir:  os.Getenv("SHELF_CASSANDRA_DATA"),
		Heap:     os.Getenv("SHELF_CASSANDRA_HEAP"),
		Log:      os.Stderr,
	}
	if l.Version == "" {
		l.Version = DefaultVersion
	}
	if l.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no cache folder (set SHELF_CASSANDRA_CACHE): %w", err)
		}
		l.CacheDir = filepath.Join(base, "shelf")
	}
	if l.DataDir == "" {
		l.DataDir = filepath.Join(repoRoot, ".cassandra")
	}
	if l.Heap == "" {
		l.Heap = "1G"
	}
	var err error
	if l.CacheDir, err = filepath.Abs(l.CacheDir); err != nil {
		return nil, err
	}
	if l.DataDir, err = filepath.Abs(l.DataDir); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Launcher) logf(format string, args ...any) {
	if l.Log != nil {
		fmt.Fprintf(l.Log, "cassandra-local: "+format+"\n", args...)
	}
}

// RepoRoot is the nearest folder at or above the working directory that
// holds a go.mod (the working directory itself when there is none), so node
// data lands in the repository's ignored .cassandra/ from any subfolder.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return dir, nil
		}
	}
}
