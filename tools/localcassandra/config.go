package localcassandra

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// yamlTemplate is a small, fast node: one token, no bootstrap, no snapshots,
// Paxos v2 (fewer round trips per LWT), small thread pools and memtables.
// The prepared-statement cache holds 64 MiB, not the default 10 MiB: each
// test keyspace prepares its own statements, which outgrow 10 MiB under
// make test, and every statement evicted is prepared again.
// storage_compatibility_mode NONE lets TTLs run past 2038. %[8]s is the
// snitch and, for a node behind a link relay, its broadcast_address
// (topologyYAML).
const yamlTemplate = `cluster_name: %[1]s
num_tokens: 1
initial_token: "%[2]s"
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
%[8]s
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "%[3]s"
listen_address: %[4]s
rpc_address: %[4]s
storage_port: %[9]d
native_transport_port: %[5]d
start_native_transport: true
auto_bootstrap: false
auto_snapshot: false
storage_compatibility_mode: NONE
paxos_variant: v2
%[7]s
commitlog_segment_size: 8MiB
data_file_directories:
  - %[6]s/data/data
commitlog_directory: %[6]s/data/commitlog
saved_caches_directory: %[6]s/data/saved_caches
hints_directory: %[6]s/data/hints
cdc_raw_directory: %[6]s/data/cdc_raw
concurrent_reads: 8
concurrent_writes: 8
concurrent_counter_writes: 4
concurrent_materialized_view_writes: 4
memtable_heap_space: 128MiB
memtable_offheap_space: 128MiB
prepared_statements_cache_size: 64MiB
`

// logbackTemplate sends INFO and above to logs/system.log (without it the
// jar logs everything at DEBUG to stdout).
const logbackTemplate = `<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>%s/logs/system.log</file>
    <encoder><pattern>%%-5level [%%thread] %%date{ISO8601} %%F:%%L - %%msg%%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
`

// jdk17Flags are the --add-exports/--add-opens of Cassandra 5.0's
// conf/jvm17-server.options; without them the node dies at start or when a
// statement is prepared.
var jdk17Flags = []string{
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
	"--add-exports", "java.management/com.sun.jmx.remote.security=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
	"--add-exports", "java.sql/java.sql=ALL-UNNAMED",
	"--add-exports", "java.base/java.lang.ref=ALL-UNNAMED",
	"--add-exports", "jdk.unsupported/sun.misc=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
	"--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens", "java.base/java.io=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
	"--add-opens", "java.base/java.nio=ALL-UNNAMED",
}

// jdkOnlyFlags are needed when the runtime is a full JDK (it has jdk.attach
// and jdk.compiler); a JRE rejects them, so they are added only then.
var jdkOnlyFlags = []string{
	"--add-exports", "jdk.attach/sun.tools.attach=ALL-UNNAMED",
	"--add-exports", "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
	"--add-opens", "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
}

// writeConfig writes conf/cassandra.yaml, conf/logback.xml, conf/jvm.args
// (the JVM's arguments as an @argfile) and, for a node in a named data
// centre, conf/cassandra-rackdc.properties into the node's folder.
func (l *Launcher) writeConfig(n Node, lib, java string) error {
	dir := l.nodeDir(n)
	conf := filepath.Join(dir, "conf")
	seeds := make([]string, len(n.Seeds))
	for i, s := range n.Seeds {
		seeds[i] = s + ":" + strconv.Itoa(StoragePort)
	}
	// A durable node acknowledges a write only once its commit log holds it;
	// the fast one syncs every 10 s and may lose the last seconds on a kill.
	commitlog := "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms"
	if n.Durable {
		commitlog = "commitlog_sync: batch"
	}
	yaml := fmt.Sprintf(yamlTemplate, n.Cluster, n.Token, strings.Join(seeds, ","), n.Address, CQLPort, dir, commitlog, topologyYAML(n), StoragePort)
	if n.ReadTimeout > 0 {
		yaml += fmt.Sprintf("read_request_timeout: %dms\n", n.ReadTimeout.Milliseconds())
	}
	if err := os.WriteFile(filepath.Join(conf, "cassandra.yaml"), []byte(yaml), 0o644); err != nil {
		return err
	}
	rackdc := filepath.Join(conf, "cassandra-rackdc.properties")
	if n.DC != "" {
		if err := os.WriteFile(rackdc, []byte(rackdcProperties(n)), 0o644); err != nil {
			return err
		}
	}
	logback := filepath.Join(conf, "logback.xml")
	if err := os.WriteFile(logback, fmt.Appendf(nil, logbackTemplate, dir), 0o644); err != nil {
		return err
	}
	jamm, _ := filepath.Glob(filepath.Join(lib, "jamm-*.jar"))
	if len(jamm) == 0 {
		return fmt.Errorf("no jamm jar in %s; remove that folder to fetch again", lib)
	}
	args := []string{
		"-Xms" + l.Heap, "-Xmx" + l.Heap, "-Xss256k",
		"-XX:+UseG1GC", "-XX:+PerfDisableSharedMem", "-XX:+ExitOnOutOfMemoryError",
		"-javaagent:" + jamm[0],
		"-Djava.net.preferIPv4Stack=true",
		"-Djdk.attach.allowAttachSelf=true",
		"-Djna.tmpdir=" + filepath.Join(dir, "tmp"),
		"-Dcassandra.config=file://" + filepath.Join(conf, "cassandra.yaml"),
		"-Dcassandra.storagedir=" + filepath.Join(dir, "data"),
		"-Dcassandra.logdir=" + filepath.Join(dir, "logs"),
		"-Dcassandra.triggers_dir=" + filepath.Join(dir, "triggers"),
		"-Dlogback.configurationFile=" + logback,
		"-Dcassandra-foreground=yes",
		"-Dcassandra.skip_wait_for_gossip_to_settle=0",
		"-Dcassandra.ring_delay_ms=5000",
		"-Dcassandra.superuser_setup_delay_ms=0",
		"-Dcassandra.available_processors=2",
		// Pauses and safepoints, as Cassandra's own jvm options log them.
		// The file is quoted: -Xlog splits its fields at ':'.
		"-Xlog:gc=info,safepoint=info:file=\"" + filepath.Join(dir, "logs", "gc.log") + "\":time,uptime,level:filecount=2,filesize=10M",
	}
	if !n.Durable {
		args = append(args, "-Dcassandra.unsafesystem=true", "-Dcassandra.skip_sync=true")
	}
	if n.DC != "" {
		// GossipingPropertyFileSnitch looks for the file on the classpath
		// unless this property names it (as a URL).
		args = append(args, "-Dcassandra-rackdc.properties=file://"+rackdc)
	}
	args = append(args, jdk17Flags...)
	if hasJDKModules(java) {
		args = append(args, jdkOnlyFlags...)
	}
	args = append(args, "-cp", filepath.Join(lib, "*"), "org.apache.cassandra.service.CassandraDaemon")
	var b strings.Builder
	for _, a := range args {
		b.WriteString(quoteArg(a))
		b.WriteByte('\n')
	}
	return os.WriteFile(filepath.Join(conf, "jvm.args"), []byte(b.String()), 0o644)
}

// topologyYAML is the node's snitch: SimpleSnitch (one data centre,
// datacenter1) unless the node names its data centre; then
// GossipingPropertyFileSnitch, which reads it from
// cassandra-rackdc.properties and tells the other nodes through gossip. A
// node behind a link relay gives the relay's address as its own to the
// other nodes (broadcast_address) and still listens on its own.
func topologyYAML(n Node) string {
	if n.DC == "" {
		return "endpoint_snitch: SimpleSnitch"
	}
	out := "endpoint_snitch: GossipingPropertyFileSnitch"
	if n.Broadcast != "" && n.Broadcast != n.Address {
		out += "\nbroadcast_address: " + n.Broadcast
	}
	return out
}

// rackdcProperties is the node's cassandra-rackdc.properties. prefer_local
// sends the traffic between two nodes of one data centre to their own
// (listen) addresses, not through the relays of the link between data
// centres.
func rackdcProperties(n Node) string {
	rack := n.Rack
	if rack == "" {
		rack = "rack1"
	}
	return fmt.Sprintf("dc=%s\nrack=%s\nprefer_local=true\n", n.DC, rack)
}

// hasJDKModules reports whether the java runtime is a full JDK (javac beside it).
func hasJDKModules(java string) bool {
	_, err := os.Stat(filepath.Join(filepath.Dir(java), "javac"))
	return err == nil
}

// quoteArg quotes one argument for a java @argfile.
func quoteArg(a string) string {
	if !strings.ContainsAny(a, " \t\"'\\#") {
		return a
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a) + `"`
}
