package testenv

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// PrivateKafka starts a single KRaft broker of the test's own on free loopback ports, in a
// temporary folder, with the Kafka jars of the shared stack, and returns its bootstrap address;
// it is stopped when the test ends. For tests that run commands with the default topic and group
// names (fsctl.orders, fsctl-order-consumer), whose messages must not reach the other tests, the
// game days and the drill that share the stack's broker under those names.
func PrivateKafka(tb testing.TB) []string {
	_, brokers := PrivateKafkaStack(tb)
	return brokers
}

// PrivateKafkaStack is PrivateKafka with the stack configuration that runs the broker, for a test
// that signals it (stack.Kill with SIGSTOP freezes it) without touching the shared broker.
func PrivateKafkaStack(tb testing.TB) (stack.Config, []string) {
	tb.Helper()
	skipShort(tb)
	cfg := stack.Config{Dir: tb.TempDir(), KafkaLibs: sharedKafkaLibs(), KafkaPort: freeTCPPort(tb), KafkaControllerPort: freeTCPPort(tb)}
	private(tb, cfg, stack.Kafka, 3*time.Minute, "jars from `make deps` expected in "+cfg.KafkaLibs)
	return cfg, []string{fmt.Sprintf("127.0.0.1:%d", cfg.KafkaPort)}
}

// freeTCPPort is a loopback port nothing listens on now.
func freeTCPPort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
