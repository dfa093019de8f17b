package localcassandra

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteConfig(t *testing.T) {
	t.Parallel()
	lib := t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "jamm-0.4.0.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := &Launcher{Version: DefaultVersion, DataDir: t.TempDir(), Heap: "512M"}
	for _, durable := range []bool{false, true} {
		n := ClusterNodes("c", [3]string{"127.0.0.21", "127.0.0.22", "127.0.0.23"})[1]
		n.Durable = durable
		if err := os.MkdirAll(filepath.Join(l.nodeDir(n), "conf"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := l.writeConfig(n, lib, "/nonexistent/bin/java"); err != nil {
			t.Fatal(err)
		}
		yaml := read(t, filepath.Join(l.nodeDir(n), "conf", "cassandra.yaml"))
		args := read(t, filepath.Join(l.nodeDir(n), "conf", "jvm.args"))
		for _, want := range []string{
			"cluster_name: shelf-c\n", `initial_token: "-3074457345618258603"`, "listen_address: 127.0.0.22\n",
			`seeds: "127.0.0.21:7000,127.0.0.22:7000,127.0.0.23:7000"`, "storage_compatibility_mode: NONE", "paxos_variant: v2",
			"read_request_timeout: 2000ms\n",
		} {
			if !strings.Contains(yaml, want) {
				t.Errorf("cassandra.yaml lacks %q:\n%s", want, yaml)
			}
		}
		for _, want := range []string{"-Xmx512M", "-javaagent:" + filepath.Join(lib, "jamm-0.4.0.jar"),
			"--add-opens\njava.base/java.lang=ALL-UNNAMED", "org.apache.cassandra.service.CassandraDaemon",
			`-Xlog:gc=info,safepoint=info:file=\"` + filepath.Join(l.nodeDir(n), "logs", "gc.log") + `\":time`} {
			if !strings.Contains(args, want) {
				t.Errorf("jvm.args lacks %q", want)
			}
		}
		if fast := strings.Contains(args, "unsafesystem") && strings.Contains(yaml, "commitlog_sync: periodic"); fast == durable {
			t.Errorf("durable=%v but unsafesystem/periodic present=%v", durable, fast)
		}
		if durable && !strings.Contains(yaml, "commitlog_sync: batch") {
			t.Error("durable node without a batch commit log")
		}
		if strings.Contains(args, "jdk.compiler") {
			t.Error("JDK-only flags added for a runtime without javac")
		}
		if !strings.Contains(yaml, "endpoint_snitch: SimpleSnitch\n") || strings.Contains(yaml, "broadcast_address") || strings.Contains(args, "rackdc") {
			t.Errorf("a node without a data centre is not a plain SimpleSnitch node:\n%s", yaml)
		}
		if _, err := os.Stat(filepath.Join(l.nodeDir(n), "conf", "cassandra-rackdc.properties")); err == nil {
			t.Error("cassandra-rackdc.properties written for a node without a data centre")
		}
	}
}

// TestWriteConfigDataCentres: each node of a two-data-centre cluster runs
// GossipingPropertyFileSnitch with its own data centre in the
// cassandra-rackdc.properties the JVM is pointed at; behind link relays it
// gives the relay's address to the others and the seeds are the relays.
func TestWriteConfigDataCentres(t *testing.T) {
	t.Parallel()
	lib := t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "jamm-0.4.0.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := &Launcher{Version: DefaultVersion, DataDir: t.TempDir(), Heap: "512M"}
	dcs := [][]string{{"127.0.0.61", "127.0.0.62"}, {"127.0.0.71", "127.0.0.72"}}
	for _, links := range [][][]string{nil, {{"127.0.0.161", "127.0.0.162"}, {"127.0.0.171", "127.0.0.172"}}} {
		nodes := DataCentreNodes("dcs", dcs, links)
		if len(nodes) != 4 {
			t.Fatalf("%d nodes, want 4", len(nodes))
		}
		tokens := map[string]bool{}
		for i, n := range nodes {
			if tokens[n.Token] {
				t.Errorf("token %s given twice", n.Token)
			}
			tokens[n.Token] = true
			dc, addr := "dc"+string(rune('1'+i/2)), dcs[i/2][i%2]
			if err := os.MkdirAll(filepath.Join(l.nodeDir(n), "conf"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := l.writeConfig(n, lib, "/nonexistent/bin/java"); err != nil {
				t.Fatal(err)
			}
			conf := filepath.Join(l.nodeDir(n), "conf")
			yaml := read(t, filepath.Join(conf, "cassandra.yaml"))
			args := read(t, filepath.Join(conf, "jvm.args"))
			rackdc := read(t, filepath.Join(conf, "cassandra-rackdc.properties"))
			seeds := `seeds: "127.0.0.61:7000,127.0.0.71:7000"`
			if links != nil {
				seeds = `seeds: "127.0.0.161:7000,127.0.0.171:7000"`
			}
			for _, want := range []string{"cluster_name: shelf-dcs\n", "endpoint_snitch: GossipingPropertyFileSnitch\n",
				"listen_address: " + addr + "\n", "rpc_address: " + addr + "\n", seeds} {
				if !strings.Contains(yaml, want) {
					t.Errorf("%s: cassandra.yaml lacks %q:\n%s", n.Name, want, yaml)
				}
			}
			if strings.Contains(yaml, "read_request_timeout") {
				t.Errorf("%s: a data centre's node keeps Cassandra's read timeout:\n%s", n.Name, yaml)
			}
			broadcast := strings.Contains(yaml, "broadcast_address: "+links2(links, i)+"\n")
			if broadcast != (links != nil) || strings.Count(yaml, "endpoint_snitch") != 1 {
				t.Errorf("%s: broadcast_address %v with links %v:\n%s", n.Name, broadcast, links, yaml)
			}
			if want := "dc=" + dc + "\nrack=rack1\nprefer_local=true\n"; rackdc != want {
				t.Errorf("%s: cassandra-rackdc.properties is %q, want %q", n.Name, rackdc, want)
			}
			if !strings.Contains(args, "-Dcassandra-rackdc.properties=file://"+filepath.Join(conf, "cassandra-rackdc.properties")+"\n") {
				t.Errorf("%s: jvm.args does not name the rackdc file:\n%s", n.Name, args)
			}
		}
	}
}

// links2 is node i's relay address in a two-by-two layout ("none",
// which no broadcast_address holds, without relays).
func links2(links [][]string, i int) string {
	if links == nil {
		return "none"
	}
	return links[i/2][i%2]
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestQuoteArg(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"-Xmx1G":            "-Xmx1G",
		"/a b/c":            `"/a b/c"`,
		`C:\x "y"`:          `"C:\\x \"y\""`,
		"-Dx=file:///tmp/a": "-Dx=file:///tmp/a",
	} {
		if got := quoteArg(in); got != want {
			t.Errorf("quoteArg(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFindJavaRejectsWrongVersions(t *testing.T) {
	// Not parallel: it changes the environment.
	dir := t.TempDir()
	fake := filepath.Join(dir, "bin", "java")
	if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho 'openjdk version \"25.0.1\" 2025-10-21' >&2\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if major, err := javaMajor(fake); err != nil || major != 25 {
		t.Fatalf("javaMajor = %d, %v", major, err)
	}
	t.Setenv("JAVA_HOME", dir)
	t.Setenv("PATH", filepath.Join(dir, "bin"))
	java, err := findJava()
	if err == nil {
		// The machine's Debian JDK 17 is found by its usual path: fine, as
		// long as the Java 25 in JAVA_HOME was not taken.
		if java == fake {
			t.Fatal("took Java 25")
		}
		return
	}
	if !strings.Contains(err.Error(), "Java 25") || !strings.Contains(err.Error(), "openjdk-17") {
		t.Fatalf("error does not say what was found and what to install: %v", err)
	}
}
