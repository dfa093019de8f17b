package localcassandra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// pomTemplate is the smallest project Maven needs to copy cassandra-all and
// its runtime dependencies into one folder.
const pomTemplate = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.shelf</groupId>
  <artifactId>cassandra-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>%s</version>
    </dependency>
  </dependencies>
</project>
`

// libDir is where the jars of one Cassandra version live.
func (l *Launcher) libDir() string {
	return filepath.Join(l.CacheDir, "cassandra-"+l.Version, "lib")
}

// EnsureLib makes sure the jars of the configured Cassandra version are in
// the cache, fetching them with Maven the first time. A marker file written
// last makes a half-finished fetch count as missing.
func (l *Launcher) EnsureLib(ctx context.Context) (string, error) {
	lib := l.libDir()
	marker := filepath.Join(lib, ".complete")
	if _, err := os.Stat(marker); err == nil {
		return lib, nil
	}
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(filepath.Dir(lib), "fetch.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(marker); err == nil { // fetched while we waited
		return lib, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", errors.New("mvn not found. " + mavenInstallHint)
	}
	work, err := os.MkdirTemp(filepath.Dir(lib), "fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "pom.xml"), fmt.Appendf(nil, pomTemplate, l.Version), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(work, "lib")
	l.logf("fetching org.apache.cassandra:cassandra-all:%s and its dependencies with Maven into %s", l.Version, lib)
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "dependency:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+out)
	cmd.Dir = work
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("maven could not fetch cassandra-all %s: %v\n%s", l.Version, err, tail(string(b), 30))
	}
	if err := os.WriteFile(filepath.Join(out, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	_ = os.RemoveAll(lib)
	if err := os.Rename(out, lib); err != nil {
		return "", err
	}
	return lib, nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
