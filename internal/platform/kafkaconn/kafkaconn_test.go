package kafkaconn

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/segmentio/kafka-go"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	c := FromEnv(env(map[string]string{
		EnvBrokers: " k1:9093, k2:9093 ,", EnvTLS: "true", EnvCA: "/ca.pem", EnvServerName: "kafka.internal",
		EnvSASL: "SCRAM-SHA-512", EnvUser: "fsctl", EnvPassword: " pw with spaces ",
	}), []string{"127.0.0.1:19092"})
	want := Conn{Brokers: []string{"k1:9093", "k2:9093"},
		TLS:  TLS{Enabled: true, CA: "/ca.pem", ServerName: "kafka.internal"},
		SASL: SASL{Mechanism: ScramSHA512, User: "fsctl", Password: " pw with spaces "}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v, want %+v", c, want)
	}
	if d := FromEnv(env(nil), []string{"127.0.0.1:19092"}); d.Brokers[0] != "127.0.0.1:19092" || d.TLS.On() || d.SASL.Mechanism != "" {
		t.Errorf("no variables: %+v, want the default brokers in plaintext", d)
	}
}

// TestValidateNamesThePart: every bad form is refused before any dial, naming the flag to fix.
func TestValidateNamesThePart(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := Conn{Brokers: []string{"k1:9093", "[::1]:9093"}, TLS: TLS{CA: ca}, SASL: SASL{Mechanism: ScramSHA512, User: "u", Password: "p"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good form: %v", err)
	}
	for _, c := range []struct {
		mutate func(*Conn)
		flag   string
	}{
		{func(c *Conn) { c.Brokers = nil }, "kafka-brokers"},
		{func(c *Conn) { c.Brokers = []string{"k1"} }, "kafka-brokers"},
		{func(c *Conn) { c.Brokers = []string{"k1:99999"} }, "kafka-brokers"},
		{func(c *Conn) { c.SASL.Mechanism = "gssapi" }, "kafka-sasl"},
		{func(c *Conn) { c.SASL.Mechanism = "" }, "kafka-sasl"},
		{func(c *Conn) { c.SASL.User = "" }, "kafka-user"},
		{func(c *Conn) { c.SASL.Password = "" }, "kafka-password"},
		{func(c *Conn) { c.SASL.Mechanism, c.TLS = Plain, TLS{} }, "kafka-sasl"},
		{func(c *Conn) { c.TLS.Cert = ca }, "kafka-cert"},
		{func(c *Conn) { c.TLS.CA = "/no/such/ca.pem" }, "kafka-ca"},
	} {
		bad := ok
		c.mutate(&bad)
		err := bad.Validate()
		var pe *PartError
		if !errors.As(err, &pe) || pe.Flag != c.flag {
			t.Errorf("%+v: %v, want an error naming --%s", bad, err, c.flag)
		}
	}
	if _, err := ok.Dialer(0); err == nil || !strings.Contains(err.Error(), "--kafka-ca") {
		t.Errorf("a CA file without a certificate: %v", err)
	}
}

// TestPasswordNeverShows: neither the String of a connection, nor its JSON, nor an explained
// error holds the password.
func TestPasswordNeverShows(t *testing.T) {
	c := Conn{Brokers: []string{"k1:9093"}, TLS: TLS{Enabled: true}, SASL: SASL{Mechanism: ScramSHA256, User: "shop", Password: "kafka-s3cr3t"}}
	b, _ := json.Marshal(c)
	explained := c.Explain(fmt.Errorf("dial: %w", kafka.SASLAuthenticationFailed)).Error()
	for _, s := range []string{c.String(), string(b), fmt.Sprintf("%v %+v %#v %#v", c, c.SASL, c, c.SASL), explained} {
		if strings.Contains(s, "kafka-s3cr3t") {
			t.Errorf("the password shows: %s", s)
		}
	}
	if got := c.String(); got != "SASL_SSL (scram-sha-256 as shop) k1:9093" {
		t.Errorf("String %q", got)
	}
}

func TestExplain(t *testing.T) {
	c := Conn{Brokers: []string{"k1:9093"}, TLS: TLS{Enabled: true}, SASL: SASL{Mechanism: ScramSHA512, User: "shop", Password: "x"}}
	for _, tc := range []struct {
		err        error
		what, hint string
	}{
		{fmt.Errorf("read: %w", kafka.SASLAuthenticationFailed), "SASL login refused (scram-sha-512 as \"shop\")", EnvPassword},
		{x509.UnknownAuthorityError{}, "authority this client does not trust", "--kafka-ca"},
		{x509.CertificateInvalidError{Reason: x509.Expired, Detail: "current time is after 2026-01-01"}, "expired", "--renew"},
		{x509.HostnameError{Certificate: &x509.Certificate{}, Host: "10.0.0.1"}, "not for 10.0.0.1", "--kafka-server-name"},
	} {
		err := c.Explain(tc.err)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), tc.hint) ||
			!strings.HasPrefix(err.Error(), "kafka k1:9093: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: explained as %q; want one line naming the broker, %q and %q", tc.err, err, tc.what, tc.hint)
		}
		if !errors.Is(err, tc.err) && !errors.As(err, new(x509.UnknownAuthorityError)) {
			t.Errorf("%v: the cause is lost", tc.err)
		}
		if c.Explain(err) != err {
			t.Error("an explained error explained twice")
		}
	}
	refused := c.Unreachable(fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED))
	if !strings.Contains(refused.Error(), "k1:9093") || strings.Count(refused.Error(), "k1:9093") != 1 || !errors.Is(refused, syscall.ECONNREFUSED) {
		t.Errorf("refused: %v, want the broker once and the cause kept", refused)
	}
	other := errors.New("something else")
	if c.Explain(other) != other || c.Explain(nil) != nil {
		t.Error("an unknown error must pass as it is")
	}
}
