// Package kafkaconn is the one form of a Kafka connection every fsctl command and the server take:
// the brokers, TLS (a CA, a client certificate, a server name) and SASL (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512), read from flags and FSCTL_KAFKA_* variables, and turned here, and only here, into
// kafka-go's dialers, transports and clients. Its String and JSON never hold the password.
package kafkaconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// The variables a connection is read from (FromEnv); each flag of Bind names its own.
const (
	EnvBrokers    = "FSCTL_KAFKA_BROKERS"
	EnvTLS        = "FSCTL_KAFKA_TLS"
	EnvCA         = "FSCTL_KAFKA_CA"
	EnvCert       = "FSCTL_KAFKA_CERT"
	EnvKey        = "FSCTL_KAFKA_KEY"
	EnvServerName = "FSCTL_KAFKA_SERVER_NAME"
	EnvInsecure   = "FSCTL_KAFKA_INSECURE_SKIP_VERIFY"
	EnvSASL       = "FSCTL_KAFKA_SASL"
	EnvUser       = "FSCTL_KAFKA_USER"
	EnvPassword   = "FSCTL_KAFKA_PASSWORD"
)

// The SASL mechanisms a connection may log in with.
const (
	Plain        = "plain"
	ScramSHA256  = "scram-sha-256"
	ScramSHA512  = "scram-sha-512"
	mechanismSet = Plain + ", " + ScramSHA256 + " or " + ScramSHA512
)

// IdleFetchWait is how long the broker holds a tailing reader's fetch of a partition with nothing
// new (kafka.ReaderConfig.MaxWait beside MinBytes 1): a fetch returns as soon as a message arrives,
// so the wait adds no latency and only sets how often an idle partition is asked again. The order
// consumer (6 partitions, while a sale's orders all go to its item's one) and the stock read model
// asked every 100 ms; at 500 ms an idle fsctl serve spent 10-11 ms of CPU a second instead of 17.5
// and the broker beside it 24.5 instead of 35-41 (docs/benchmarks.md, fifteenth part). The price:
// a rebalance or a close waits up to this long for a fetch in flight to come back.
const IdleFetchWait = 500 * time.Millisecond

// Conn is how to reach a Kafka cluster. The zero TLS and SASL are plaintext without a login, the
// local stack's default.
type Conn struct {
	Brokers []string `json:"brokers"`
	TLS     TLS      `json:"tls"`
	SASL    SASL     `json:"sasl"`
}

// TLS is the client side of the brokers' TLS listener.
type TLS struct {
	// Enabled turns TLS on; a CA, a certificate or a server name turns it on too.
	Enabled bool `json:"enabled"`
	// CA is a PEM file of the authorities the brokers' certificates chain to (the system's roots
	// when empty).
	CA string `json:"ca,omitempty"`
	// Cert and Key are the client certificate and its key, for brokers that ask for one (mTLS).
	Cert string `json:"cert,omitempty"`
	Key  string `json:"key,omitempty"`
	// ServerName is checked against the brokers' certificates instead of their host names.
	ServerName string `json:"serverName,omitempty"`
	// InsecureSkipVerify trusts any certificate: anyone on the path can read and change the
	// traffic. Only by an explicit flag, and Warnings says so.
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// On reports whether the connection speaks TLS.
func (t TLS) On() bool {
	return t.Enabled || t.CA != "" || t.Cert != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// SASL is the login: a mechanism, a user and a password. The password never leaves the process
// (no JSON, no String).
type SASL struct {
	Mechanism string `json:"mechanism,omitempty"`
	User      string `json:"user,omitempty"`
	Password  string `json:"-"`
}

// String names the login without its password, so no %v or %+v of a connection prints it.
func (s SASL) String() string {
	if s.Mechanism == "" {
		return "none"
	}
	return s.Mechanism + " as " + s.User
}

// GoString is String for %#v.
func (s SASL) GoString() string { return s.String() }

// FromEnv reads a connection from the FSCTL_KAFKA_* variables, lookup being os.LookupEnv or a
// test's map; brokers default to def.
func FromEnv(lookup func(string) (string, bool), def []string) Conn {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	c := Conn{Brokers: def}
	if b := SplitBrokers(get(EnvBrokers)); len(b) > 0 {
		c.Brokers = b
	}
	c.TLS = TLS{Enabled: truthy(get(EnvTLS)), CA: get(EnvCA), Cert: get(EnvCert), Key: get(EnvKey),
		ServerName: get(EnvServerName), InsecureSkipVerify: truthy(get(EnvInsecure))}
	c.SASL = SASL{Mechanism: strings.ToLower(get(EnvSASL)), User: get(EnvUser)}
	c.SASL.Password, _ = lookup(EnvPassword) // a password may hold spaces
	return c
}

// Env is the connection from the process's environment.
func Env(def []string) Conn { return FromEnv(os.LookupEnv, def) }

// EnvFor is brokers with the TLS and SASL of the process's environment: for brokers a command
// chose itself (a stack's cluster), reached the way FSCTL_KAFKA_* say.
func EnvFor(brokers []string) Conn {
	c := Env(nil)
	c.Brokers = brokers
	return c
}

func truthy(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// SplitBrokers parses a comma-separated broker list, dropping blanks.
func SplitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// PartError is a connection that is wrong in one part, named by its flag.
type PartError struct {
	Flag string // the flag that sets the part, e.g. "kafka-sasl"
	Msg  string
}

func (e *PartError) Error() string { return "--" + e.Flag + ": " + e.Msg }

// Validate checks the form of the connection without dialing: brokers as host:port, a known
// mechanism with a user and a password, a certificate with its key, files that exist.
func (c Conn) Validate() error {
	if len(c.Brokers) == 0 {
		return &PartError{"kafka-brokers", "no broker: give at least one host:port"}
	}
	for _, b := range c.Brokers {
		host, port, err := net.SplitHostPort(b) // [::1]:9092 too
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n <= 0 || n > 65535 {
			return &PartError{"kafka-brokers", fmt.Sprintf("%q is not host:port", b)}
		}
	}
	s := c.SASL
	switch {
	case s.Mechanism == "" && (s.User != "" || s.Password != ""):
		return &PartError{"kafka-sasl", "a user or password without a mechanism: say " + mechanismSet}
	case s.Mechanism != "" && !slices.Contains([]string{Plain, ScramSHA256, ScramSHA512}, s.Mechanism):
		return &PartError{"kafka-sasl", fmt.Sprintf("%q: want %s", s.Mechanism, mechanismSet)}
	case s.Mechanism != "" && s.User == "":
		return &PartError{"kafka-user", "missing: " + s.Mechanism + " logs in as a user"}
	case s.Mechanism != "" && s.Password == "":
		return &PartError{"kafka-password", "missing: set " + EnvPassword + " (a flag would show in ps)"}
	case s.Mechanism == Plain && !c.TLS.On():
		return &PartError{"kafka-sasl", "plain sends the password in the clear: turn on TLS (--kafka-tls), as SASL_SSL listeners expect"}
	}
	t := c.TLS
	if (t.Cert == "") != (t.Key == "") {
		return &PartError{"kafka-cert", "the client certificate and its key (--kafka-key) go together"}
	}
	for flag, f := range map[string]string{"kafka-ca": t.CA, "kafka-cert": t.Cert, "kafka-key": t.Key} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return &PartError{flag, fmt.Sprintf("%s: %v", f, errors.Unwrap(err))}
		}
	}
	return nil
}

// Warnings are what an operator must hear about the connection: a check turned off.
func (c Conn) Warnings() []string {
	if c.TLS.InsecureSkipVerify {
		return []string{"kafka: --kafka-insecure-skip-verify: the brokers' certificates are not checked; anyone on the path can read and change the orders"}
	}
	return nil
}

// GoString is String for %#v.
func (c Conn) GoString() string { return c.String() }

// String names the connection for logs and reports, never with its password:
// "SASL_SSL (scram-sha-512 as fsctl) k1:9093,k2:9093".
func (c Conn) String() string {
	proto := "PLAINTEXT"
	switch {
	case c.TLS.On() && c.SASL.Mechanism != "":
		proto = "SASL_SSL"
	case c.TLS.On():
		proto = "SSL"
	case c.SASL.Mechanism != "":
		proto = "SASL_PLAINTEXT"
	}
	if c.SASL.Mechanism != "" {
		proto += " (" + c.SASL.String() + ")"
	}
	return proto + " " + strings.Join(c.Brokers, ",")
}

// TLSConfig builds the client's TLS settings; nil for plaintext.
func (c Conn) TLSConfig() (*tls.Config, error) {
	t := c.TLS
	if !t.On() {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, &PartError{"kafka-ca", err.Error()}
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &PartError{"kafka-ca", t.CA + ": no PEM certificate in it"}
		}
	}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, &PartError{"kafka-cert", fmt.Sprintf("%s / %s: %v", t.Cert, t.Key, err)}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// mechanism is the SASL login; nil without one.
func (c Conn) mechanism() (sasl.Mechanism, error) {
	s := c.SASL
	switch s.Mechanism {
	case "":
		return nil, nil
	case Plain:
		return plain.Mechanism{Username: s.User, Password: s.Password}, nil
	case ScramSHA256:
		return scram.Mechanism(scram.SHA256, s.User, s.Password)
	case ScramSHA512:
		return scram.Mechanism(scram.SHA512, s.User, s.Password)
	}
	return nil, &PartError{"kafka-sasl", fmt.Sprintf("%q: want %s", s.Mechanism, mechanismSet)}
}

// parts are what kafka-go needs of the connection: its TLS settings and its SASL login, each nil
// when unused; an error is a form Validate refuses or a file that does not load.
func (c Conn) parts() (*tls.Config, sasl.Mechanism, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	cfg, err := c.TLSConfig()
	if err != nil {
		return nil, nil, err
	}
	m, err := c.mechanism()
	return cfg, m, err
}

// Dialer is a kafka-go dialer for this connection (readers, admin connections).
func (c Conn) Dialer(timeout time.Duration) (*kafka.Dialer, error) {
	cfg, m, err := c.parts()
	if err != nil {
		return nil, err
	}
	return &kafka.Dialer{Timeout: timeout, DualStack: true, TLS: cfg, SASLMechanism: m}, nil
}

// Transport is a kafka-go transport of its own for this connection (writers, clients): kafka-go's
// shared default transport caches metadata for seconds and knows no TLS or SASL.
func (c Conn) Transport(dialTimeout, metadataTTL time.Duration) (*kafka.Transport, error) {
	cfg, m, err := c.parts()
	if err != nil {
		return nil, err
	}
	return &kafka.Transport{DialTimeout: dialTimeout, MetadataTTL: metadataTTL, TLS: cfg, SASL: m}, nil
}

// Client is a kafka-go client on a transport of its own, each call within timeout; closeIdle
// releases its connections.
func (c Conn) Client(timeout time.Duration) (client *kafka.Client, closeIdle func(), err error) {
	tr, err := c.Transport(timeout, time.Second)
	if err != nil {
		return nil, nil, err
	}
	return &kafka.Client{Addr: kafka.TCP(c.Brokers...), Timeout: timeout, Transport: tr}, tr.CloseIdleConnections, nil
}
