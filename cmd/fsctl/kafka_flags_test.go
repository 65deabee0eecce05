package main

import (
	"path/filepath"
	"strings"
	"testing"
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
