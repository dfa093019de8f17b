package localcassandra

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
)

// javaInstallHint is what a person on a machine without a usable JDK reads.
const javaInstallHint = "Cassandra 5.0 runs on Java 11 or 17 (17 preferred). " +
	"Install it (Debian/Ubuntu: apt-get install -y openjdk-17-jdk-headless; " +
	"macOS: brew install openjdk@17) or point JAVA_HOME at one"

// mavenInstallHint is what a person on a machine without Maven reads.
const mavenInstallHint = "Maven fetches the Cassandra jars from Maven Central. " +
	"Install it (Debian/Ubuntu: apt-get install -y maven; macOS: brew install maven)"

var javaVersionRE = regexp.MustCompile(`version "(\d+)(?:\.(\d+))?`)

// findJava returns a java binary Cassandra 5.0 accepts (major 11 or 17),
// preferring JAVA_HOME, then the PATH, then the usual Debian locations.
func findJava() (string, error) {
	var candidates []string
	if home := os.Getenv("JAVA_HOME"); home != "" {
		candidates = append(candidates, filepath.Join(home, "bin", "java"))
	}
	if p, err := exec.LookPath("java"); err == nil {
		candidates = append(candidates, p)
	}
	for _, pattern := range []string{
		"/usr/lib/jvm/java-17-openjdk-*/bin/java",
		"/usr/lib/jvm/temurin-17-*/bin/java",
		"/usr/lib/jvm/java-11-openjdk-*/bin/java",
	} {
		matches, _ := filepath.Glob(pattern)
		candidates = append(candidates, matches...)
	}
	var seen []string
	for _, c := range candidates {
		major, err := javaMajor(c)
		if err != nil {
			continue
		}
		if major == 17 || major == 11 {
			return c, nil
		}
		seen = append(seen, fmt.Sprintf("%s is Java %d", c, major))
	}
	if len(seen) > 0 {
		return "", fmt.Errorf("no Java 11 or 17 found (%v). %s", seen, javaInstallHint)
	}
	return "", errors.New("no java found. " + javaInstallHint)
}

// javaMajor runs `java -version` and returns the major version number.
func javaMajor(java string) (int, error) {
	out, err := exec.Command(java, "-version").CombinedOutput()
	if err != nil {
		return 0, err
	}
	m := javaVersionRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("cannot read the version of %s", java)
	}
	major, _ := strconv.Atoi(string(m[1]))
	if major == 1 && len(m[2]) > 0 { // "1.8.0_292" style
		major, _ = strconv.Atoi(string(m[2]))
	}
	return major, nil
}
