package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/profiles"
)

// TestKafkaConnectionMistakes: a Kafka connection wrong in form is a usage error naming its flag,
// and a password file that cannot be read is a file that cannot be read (exit 1), before any dial.
func TestKafkaConnectionMistakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--kafka-sasl", "gssapi"}, exitUsage, "--kafka-sasl"},
		{[]string{"--kafka-sasl", "scram-sha-512"}, exitUsage, "--kafka-user"},
		{[]string{"--kafka-brokers", "no-port"}, exitUsage, "--kafka-brokers"},
		{[]string{"--kafka-password-file", filepath.Join(t.TempDir(), "none")}, exitFailed, "--kafka-password-file"},
	} {
		_, code, err := runCLI(t, append([]string{"reconcile", "--sale", "s", "--redis-url", "redis://127.0.0.1:1/0"}, c.args...)...)
		if code != c.code || err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: exit %d, %v; want exit %d naming %s", c.args, code, err, c.code, c.says)
		}
	}
}

// TestProfileReachesSecuredKafka: a profile's kafka block says how to reach SASL_SSL brokers (the
// secure stack's), its files relative to the profile and its password from a variable it names.
// FSCTL_KAFKA_BROKERS or --kafka-brokers take the connection back; a --kafka-* flag overrides its
// part; a password variable that is not set is a usage error naming the field.
func TestProfileReachesSecuredKafka(t *testing.T) {
	cfg, e := testenv.SecureStack(t)
	pw, err := stack.Secrets{Dir: cfg.Dir}.Password("kafka")
	if err != nil {
		t.Fatal(err)
	}
	good := kafkaconn.Conn{Brokers: e.KafkaBrokers, TLS: kafkaconn.TLS{Enabled: true, CA: e.Credentials.CA},
		SASL: kafkaconn.SASL{Mechanism: kafkaconn.ScramSHA512, User: stack.SecureUser, Password: pw}}
	topic := "fsctl.profile-conn." + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := events.EnsureTopic(t.Context(), good, topic, 1); err != nil {
		t.Fatal(err)
	}
	read := func(b []byte, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), read(os.ReadFile(e.Credentials.CA)), 0o600); err != nil {
		t.Fatal(err)
	}
	bundled := string(read(profiles.Files.ReadFile(profiles.Bundled)))
	conn := fmt.Sprintf("kafka:\n  topic: %s\n  brokers: [%s]\n  ca: ca.pem\n  sasl: SCRAM-SHA-512\n  user: %s\n  passwordEnv: SHOP_KAFKA_PASSWORD\n",
		topic, strings.Join(e.KafkaBrokers, ", "), stack.SecureUser)
	text := strings.Replace(bundled, "kafka:\n  topic: fsctl.orders\n", conn, 1)
	if text == bundled {
		t.Fatal("the bundled profile's kafka block moved: update this test")
	}
	prof := filepath.Join(dir, "shop.yaml")
	if err := os.WriteFile(prof, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{kafkaconn.EnvBrokers, kafkaconn.EnvTLS, kafkaconn.EnvCA, kafkaconn.EnvSASL, kafkaconn.EnvUser, kafkaconn.EnvPassword} {
		t.Setenv(k, "")
	}
	topicLine := func(extra ...string) (string, int) {
		t.Helper()
		out, code, err := runCLI(t, append([]string{"profile", "check", "--profile", prof, "--sale", "none", "-o", "json"}, extra...)...)
		if code == exitUsage {
			t.Fatalf("%v: exit 2: %v", extra, err)
		}
		var rep struct {
			Lines []struct{ Check, Status, Detail string }
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, out)
		}
		for _, r := range rep.Lines {
			if r.Check == "kafka.topic" {
				return r.Status + " " + r.Detail, code
			}
		}
		t.Fatalf("%v: no kafka.topic line:\n%s", extra, out)
		return "", 0
	}

	t.Setenv("SHOP_KAFKA_PASSWORD", pw)
	if line, _ := topicLine(); !strings.HasPrefix(line, "pass "+topic+": 1 partitions") {
		t.Errorf("the profile's connection: %s", line)
	}
	if line, _ := topicLine("--kafka-user", "nobody"); !strings.Contains(line, "SASL login refused") || !strings.Contains(line, `"nobody"`) {
		t.Errorf("--kafka-user over the profile's user: %s, want the login refused", line)
	}
	t.Setenv(kafkaconn.EnvBrokers, "127.0.0.1:1")
	if line, _ := topicLine(); !strings.HasPrefix(line, "fail") || !strings.Contains(line, "127.0.0.1:1") {
		t.Errorf("FSCTL_KAFKA_BROKERS over the profile: %s", line)
	}
	t.Setenv(kafkaconn.EnvBrokers, "")
	t.Setenv("SHOP_KAFKA_PASSWORD", "wrong")
	if line, _ := topicLine(); !strings.Contains(line, "SASL login refused") {
		t.Errorf("a wrong password: %s", line)
	}
	t.Setenv("SHOP_KAFKA_PASSWORD", "")
	_, code, err := runCLI(t, "profile", "check", "--profile", prof, "--sale", "none")
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "kafka.passwordEnv") || strings.Contains(err.Error(), pw) {
		t.Errorf("an unset password variable: exit %d, %v; want exit 2 naming kafka.passwordEnv", code, err)
	}
}
