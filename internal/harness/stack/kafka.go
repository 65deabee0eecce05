package stack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// kafkaService is the stack's single-node KRaft Kafka (broker and controller in one JVM) run from
// the jars FetchKafka copies out of Maven Central.
type kafkaService struct{ c Config }

func (k kafkaService) node() kafkaNode {
	return kafkaNode{c: k.c, name: "kafka", dir: k.c.kafkaDir(), id: 1, port: k.c.KafkaPort,
		controllerPort: k.c.KafkaControllerPort, voters: fmt.Sprintf("1@127.0.0.1:%d", k.c.KafkaControllerPort), brokers: 1}
}

func (k kafkaService) status() ServiceStatus { return k.node().status() }
func (k kafkaService) up(ctx context.Context, log io.Writer) (int, bool, error) {
	return k.node().up(ctx, log, "")
}
func (k kafkaService) down(ctx context.Context) error { return k.node().down(ctx) }

// kafkaNode is one KRaft node, broker and controller in one JVM: the single broker, or one node of
// the local Kafka cluster (whose nodes share a quorum of voters and a cluster id).
type kafkaNode struct {
	c                    Config
	name, dir            string
	id                   int
	port, controllerPort int
	voters               string // controller.quorum.voters
	brokers              int    // how many brokers the cluster has: its replication factors
}

func (k kafkaNode) dataDir() string   { return filepath.Join(k.dir, "data") }
func (k kafkaNode) pidFile() string   { return filepath.Join(k.dir, "kafka.pid") }
func (k kafkaNode) logFile() string   { return filepath.Join(k.dir, "kafka.log") }
func (k kafkaNode) propsFile() string { return filepath.Join(k.dir, "server.properties") }
func (k kafkaNode) log4jFile() string { return filepath.Join(k.dir, "log4j2.properties") }
func (k kafkaNode) addr() string      { return fmt.Sprintf("127.0.0.1:%d", k.port) }

// kafkaMain is both the class the broker runs and what identifies its process in /proc.
const kafkaMain = "kafka.Kafka"

func (k kafkaNode) status() ServiceStatus {
	pid, ok := pidFromFile(k.pidFile(), kafkaMain)
	return ServiceStatus{Name: k.name, Address: k.addr(), PID: pid, Running: ok, DataDir: k.dataDir(), LogFile: k.logFile()}
}

// properties renders the node's server.properties: broker and controller in one, loopback listeners
// only, and no implicit topic creation, so a typo in a topic name fails loudly instead of creating a
// one-partition topic. One broker has replication factors of one; a cluster replicates the internal
// topics three ways (at most its size) and asks two in-sync replicas of every acks=all write, so a
// broker lost loses nothing acknowledged.
func (k kafkaNode) properties() string {
	rf := min(k.brokers, 3)
	isr := max(min(rf-1, 2), 1)
	return fmt.Sprintf(`# Written by fsctl stack up on every start; change the stack's flags instead.
process.roles=broker,controller
node.id=%[4]d
controller.quorum.voters=%[5]s
listeners=%[8]s://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=%[8]s://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=%[8]s
listener.security.protocol.map=CONTROLLER:PLAINTEXT,%[8]s:%[8]s
log.dirs=%[3]s
num.partitions=1
default.replication.factor=%[6]d
min.insync.replicas=%[7]d
offsets.topic.replication.factor=%[6]d
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=%[6]d
transaction.state.log.min.isr=%[7]d
share.coordinator.state.topic.replication.factor=%[6]d
share.coordinator.state.topic.min.isr=%[7]d
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
delete.topic.enable=true
`, k.port, k.controllerPort, k.dataDir(), k.id, k.voters, rf, isr, k.protocol()) + k.failover() + k.security()
}

// protocol is the client listener's security protocol: SASL_SSL on a secure stack (no plaintext
// client listener at all), else PLAINTEXT. The controllers' own listener stays on loopback.
func (k kafkaNode) protocol() string {
	if k.c.Secure {
		return "SASL_SSL"
	}
	return "PLAINTEXT"
}

func (k kafkaNode) keystoreFile() string { return filepath.Join(k.dir, "keystore.pem") }

// security is a secure node's TLS and SCRAM settings: its key and certificate chain as a PEM
// keystore, the stack's CA as the truststore (brokers check each other), and SCRAM-SHA-512 as the
// only mechanism, the brokers logging in to each other as the stack's admin user.
func (k kafkaNode) security() string {
	if !k.c.Secure {
		return ""
	}
	pw, _ := k.c.secrets().Password("kafka-admin") // up checks it is there before rendering
	return fmt.Sprintf(`sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";
ssl.keystore.type=PEM
ssl.keystore.location=%s
ssl.truststore.type=PEM
ssl.truststore.location=%s
ssl.client.auth=none
`, adminUser, pw, k.keystoreFile(), k.c.secrets().CA())
}

// scramUsers are the StorageTool arguments that create a secure cluster's SCRAM users with the
// log: the brokers' admin and the checkout's user.
func (k kafkaNode) scramUsers() ([]string, error) {
	if !k.c.Secure {
		return nil, nil
	}
	var args []string
	for user, name := range map[string]string{adminUser: "kafka-admin", SecureUser: "kafka"} {
		pw, err := k.c.secrets().Password(name)
		if err != nil {
			return nil, err
		}
		args = append(args, "--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", user, pw))
	}
	return args, nil
}

// writeSecurity writes a secure node's keystore, before each start (a renewed certificate is
// picked up at the restart).
func (k kafkaNode) writeSecurity() error {
	if !k.c.Secure {
		return nil
	}
	if _, err := k.c.secrets().Password("kafka-admin"); err != nil {
		return err
	}
	ks, err := k.c.secrets().keystore()
	if err != nil {
		return err
	}
	return writeSecret(k.keystoreFile(), ks)
}

// failover is what a cluster adds. The controller fences a broker that missed 2 s of heartbeats
// (Kafka's default waits 9 s), which is what moves its partitions' leadership and drops it from
// their in-sync replicas, so acks=all writes flow again that much sooner after a broker dies. A
// broker that dies is often the active controller too (every node is both): its voters elect
// another after 1 s without a fetch (default 2 s), with 500 ms election timeouts (default 1 s),
// and only then does the new controller start counting the dead broker's missed heartbeats.
// Measured on the 2-core box, the leader of the orders partition killed while it was also the
// controller: 7.1 s from the kill to the new leader with the defaults this replaced.
func (k kafkaNode) failover() string {
	if k.brokers <= 1 {
		return ""
	}
	return "broker.session.timeout.ms=2000\nbroker.heartbeat.interval.ms=400\n" +
		"controller.quorum.fetch.timeout.ms=1000\ncontroller.quorum.election.timeout.ms=500\ncontroller.quorum.election.backoff.max.ms=500\n"
}

// kafkaLog4j sends the broker's log to stdout (which the stack appends to kafka.log) at INFO, with
// the per-config and per-client dumps that drown everything else turned down to WARN.
const kafkaLog4j = `# Written by fsctl stack up.
status = warn
name = fsctl-kafka
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d{ISO8601}] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
`

// up starts the node unless it runs. clusterID formats a new node's storage with that id (all nodes
// of a cluster share one); empty makes a new id.
func (k kafkaNode) up(ctx context.Context, log io.Writer, clusterID string) (int, bool, error) {
	if pid, ok := pidFromFile(k.pidFile(), kafkaMain); ok {
		return pid, false, k.wait(ctx, func() error { return nil })
	}
	for _, p := range []int{k.port, k.controllerPort} {
		if portTaken(p) {
			return 0, false, fmt.Errorf("port %d is taken by a process this stack did not start; stop it or pick other ports (--kafka-port/--kafka-controller-port, --kafka-cluster-port)", p)
		}
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return 0, false, errors.New("java not found on PATH; the Kafka broker needs a Java 17+ runtime (apt-get install openjdk-17-jre-headless)")
	}
	if !kafkaJarsPresent(k.c.KafkaLibs) {
		return 0, false, fmt.Errorf("kafka jars missing in %s; run `make deps` (or `fsctl stack deps`)", k.c.KafkaLibs)
	}
	if err := os.MkdirAll(k.dir, 0o755); err != nil {
		return 0, false, err
	}
	if err := k.writeSecurity(); err != nil {
		return 0, false, err
	}
	// 0600: a secure node's properties hold the brokers' SCRAM password.
	if err := writeSecret(k.propsFile(), []byte(k.properties())); err != nil {
		return 0, false, err
	}
	if err := os.WriteFile(k.log4jFile(), []byte(kafkaLog4j), 0o644); err != nil {
		return 0, false, err
	}
	classpath := filepath.Join(k.c.KafkaLibs, "*") // the JVM expands the wildcard itself
	if !fileExists(filepath.Join(k.dataDir(), "meta.properties")) {
		_ = os.RemoveAll(k.dataDir()) // an interrupted format leaves nothing worth keeping
		id := clusterID
		if id == "" {
			var err error
			if id, err = newClusterID(); err != nil {
				return 0, false, err
			}
		}
		scram, err := k.scramUsers()
		if err != nil {
			return 0, false, err
		}
		if _, err := runTool(ctx, k.dir, java, append([]string{"-Dlog4j2.configurationFile=" + k.log4jFile(), "-cp", classpath,
			"kafka.tools.StorageTool", "format", "-t", id, "-c", k.propsFile()}, scram...)...); err != nil {
			return 0, false, err
		}
		fmt.Fprintf(log, "%-9s formatted %s (cluster %s)\n", k.name, k.dataDir(), id)
	}
	cmd, exited, err := startDetached(java, []string{
		"-Xms256m", "-Xmx512m", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + k.log4jFile(), "-Dkafka.logs.dir=" + k.dir,
		"-cp", classpath, kafkaMain, k.propsFile(),
	}, k.dir, k.logFile())
	if err != nil {
		return 0, false, err
	}
	pid := cmd.Process.Pid
	if err := os.WriteFile(k.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		_ = stopPID(ctx, pid, kafkaMain, 10*time.Second)
		return 0, false, err
	}
	if err := k.wait(ctx, exitedFunc(exited)); err != nil {
		_ = stopPID(context.WithoutCancel(ctx), pid, kafkaMain, 10*time.Second)
		_ = os.Remove(k.pidFile())
		return 0, false, err
	}
	return pid, true, nil
}

// wait returns once the broker answers a metadata request listing every broker of its cluster,
// which it does only after the controller has registered and unfenced them, i.e. when topics with
// the cluster's replication factor can be created.
func (k kafkaNode) wait(ctx context.Context, dead func() error) error {
	admin, err := k.c.kafkaAdmin(k.addr())
	if err != nil {
		return err
	}
	dialer, err := admin.Dialer(5 * time.Second)
	if err != nil {
		return err
	}
	err = waitReady(ctx, 120*time.Second, dead, func(ctx context.Context) error {
		conn, err := dialer.DialContext(ctx, "tcp", k.addr())
		if err != nil {
			return err
		}
		defer conn.Close()
		if deadline, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(deadline)
		}
		brokers, err := conn.Brokers()
		if err != nil {
			return err
		}
		if len(brokers) < k.brokers {
			return fmt.Errorf("metadata lists %d of %d brokers yet", len(brokers), k.brokers)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("metadata from %s: %w\nlog %s:\n%s", k.addr(), err, k.logFile(), tail(k.logFile(), 30))
	}
	return nil
}

func (k kafkaNode) down(ctx context.Context) error {
	pid, ok := pidFromFile(k.pidFile(), kafkaMain)
	if !ok {
		return nil
	}
	// SIGTERM runs the broker's controlled shutdown, which flushes and closes the logs cleanly, so the
	// next start skips log recovery.
	if err := stopPID(ctx, pid, kafkaMain, 45*time.Second); err != nil {
		return err
	}
	_ = os.Remove(k.pidFile())
	return nil
}

// newClusterID makes a KRaft cluster id the way Kafka's Uuid.randomUuid does (base64url of 16 random
// bytes, never starting with '-'), saving a JVM start for `StorageTool random-uuid`.
func newClusterID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); !strings.HasPrefix(id, "-") {
			return id, nil
		}
	}
}

func kafkaJarsPresent(libs string) bool {
	m, _ := filepath.Glob(filepath.Join(libs, "kafka_2.13-*.jar"))
	return len(m) > 0
}
