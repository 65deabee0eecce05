package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/server"
)

// endpointFlags are the service addresses every command that talks to the stack takes. Defaults
// come from the environment (FSCTL_REDIS_URL, FSCTL_POSTGRES_URL, FSCTL_KAFKA_BROKERS), then from
// the local stack's ports.
type endpointFlags struct {
	redisURL    string
	postgresURL string
	kafka       kafkaconn.Conn
	// kafkaPasswordFile, when set, holds the SASL password (read at use).
	kafkaPasswordFile string
	// flags are the command's flags, to tell a --kafka-* given from its default; envBrokers says
	// FSCTL_KAFKA_BROKERS named brokers.
	flags      *pflag.FlagSet
	envBrokers bool
}

func (e *endpointFlags) bind(fs *pflag.FlagSet, kafka bool) {
	env := stack.EndpointsFromEnv()
	addressString(fs, &e.redisURL, "redis-url", env.RedisURL, "Redis: redis://host:port/db, or redis+cluster://host:port,host:port for a Redis Cluster; rediss:// for TLS, with ?ca=FILE&cert=FILE&key=FILE&server_name=NAME (env "+stack.EnvRedisURL+"; FSCTL_REDIS_CA, _CERT, _KEY, _SERVER_NAME, _USER and _PASSWORD complete it)")
	addressString(fs, &e.postgresURL, "postgres-url", env.PostgresURL, "PostgreSQL URL; sslmode=verify-full&sslrootcert=FILE for verified TLS, the password from PGPASSWORD or a PGPASSFILE (env "+stack.EnvPostgresURL+")")
	if kafka {
		bindKafka(fs, &e.kafka, &e.kafkaPasswordFile, env.KafkaBrokers)
		e.flags, e.envBrokers = fs, os.Getenv(kafkaconn.EnvBrokers) != ""
	}
}

// bindKafka adds the Kafka connection's flags, each defaulting to its FSCTL_KAFKA_* variable.
func bindKafka(fs *pflag.FlagSet, c *kafkaconn.Conn, passwordFile *string, brokers []string) {
	*c = kafkaconn.Env(brokers)
	fs.StringSliceVar(&c.Brokers, "kafka-brokers", c.Brokers, "Kafka bootstrap brokers, comma separated (env "+kafkaconn.EnvBrokers+")")
	fs.BoolVar(&c.TLS.Enabled, "kafka-tls", c.TLS.Enabled, "reach the brokers over TLS (SSL or SASL_SSL listeners; env "+kafkaconn.EnvTLS+")")
	fs.StringVar(&c.TLS.CA, "kafka-ca", c.TLS.CA, "PEM file of the CA the brokers' certificates chain to; implies --kafka-tls (env "+kafkaconn.EnvCA+")")
	fs.StringVar(&c.TLS.Cert, "kafka-cert", c.TLS.Cert, "client certificate (PEM) for brokers that ask for one, with --kafka-key (env "+kafkaconn.EnvCert+")")
	fs.StringVar(&c.TLS.Key, "kafka-key", c.TLS.Key, "the client certificate's private key (PEM; env "+kafkaconn.EnvKey+")")
	markSecret(fs, "kafka-key") // only a path, yet where a key lives is nobody's business
	fs.StringVar(&c.TLS.ServerName, "kafka-server-name", c.TLS.ServerName, "name to check the brokers' certificates against instead of their host names (env "+kafkaconn.EnvServerName+")")
	fs.BoolVar(&c.TLS.InsecureSkipVerify, "kafka-insecure-skip-verify", c.TLS.InsecureSkipVerify, "do not check the brokers' certificates (tests only: anyone on the path can read and change the orders; env "+kafkaconn.EnvInsecure+")")
	fs.StringVar(&c.SASL.Mechanism, "kafka-sasl", c.SASL.Mechanism, "SASL login: plain, scram-sha-256 or scram-sha-512 (env "+kafkaconn.EnvSASL+")")
	fs.StringVar(&c.SASL.User, "kafka-user", c.SASL.User, "SASL user (env "+kafkaconn.EnvUser+")")
	fs.StringVar(passwordFile, "kafka-password-file", "", "file holding the SASL password (else env "+kafkaconn.EnvPassword+"; never a flag of its own: ps would show it)")
	markSecret(fs, "kafka-password-file")
}

// kafkaConn is the Kafka connection of the command, its form checked: a wrong part is a usage
// error naming its flag; a check turned off is said on warn. It is the one the flags and the
// FSCTL_KAFKA_* variables describe, unless neither names brokers and the profile (prof, nil for a
// command without one) does: then it is the profile's, each --kafka-* flag given on the command
// line overriding its part.
func (e *endpointFlags) kafkaConn(warn io.Writer, prof *profile.Profile) (kafkaconn.Conn, error) {
	c := e.kafka
	if prof != nil && prof.ReachesKafka() && !e.flags.Changed("kafka-brokers") && !e.envBrokers {
		var err error
		if c, err = prof.KafkaConn(); err != nil {
			return c, err
		}
		e.overlayKafka(&c)
	}
	c.SASL.Mechanism = strings.ToLower(c.SASL.Mechanism)
	if e.kafkaPasswordFile != "" {
		b, err := os.ReadFile(e.kafkaPasswordFile)
		if err != nil {
			return c, fmt.Errorf("--kafka-password-file: %w", err) // a file that cannot be read: exit 1, as for every file
		}
		c.SASL.Password = strings.TrimRight(string(b), "\r\n")
	}
	if len(c.Brokers) == 0 {
		return c, nil // the command says what it does without Kafka
	}
	if err := c.Validate(); err != nil {
		return c, usageError(err)
	}
	for _, w := range c.Warnings() {
		fmt.Fprintln(warn, "warning:", w)
	}
	return c, nil
}

// overlayKafka sets each part of c whose --kafka-* flag was given on the command line.
func (e *endpointFlags) overlayKafka(c *kafkaconn.Conn) {
	k := e.kafka
	parts := map[string]func(){
		"kafka-tls":                  func() { c.TLS.Enabled = k.TLS.Enabled },
		"kafka-ca":                   func() { c.TLS.CA = k.TLS.CA },
		"kafka-cert":                 func() { c.TLS.Cert = k.TLS.Cert },
		"kafka-key":                  func() { c.TLS.Key = k.TLS.Key },
		"kafka-server-name":          func() { c.TLS.ServerName = k.TLS.ServerName },
		"kafka-insecure-skip-verify": func() { c.TLS.InsecureSkipVerify = k.TLS.InsecureSkipVerify },
		"kafka-sasl":                 func() { c.SASL.Mechanism = k.SASL.Mechanism },
		"kafka-user":                 func() { c.SASL.User = k.SASL.User },
	}
	e.flags.Visit(func(f *pflag.Flag) {
		if set, ok := parts[f.Name]; ok {
			set()
		}
	})
}

// envJWTSecret names the variable holding the HS256 secret buyers' tokens are signed with.
const envJWTSecret = "FSCTL_JWT_SECRET"

// Variables of the server's operator token and payment provider.
const (
	envAdminToken   = "FSCTL_ADMIN_TOKEN"
	envPaymentURL   = "FSCTL_PAYMENT_URL"
	envRoomRedisURL = "FSCTL_ROOM_REDIS_URL"
	envRoomSecret   = "FSCTL_ROOM_SECRET"
)

// devJWTSecret is the secret of the local stack and the demo; serve warns when it is used.
const devJWTSecret = server.DevJWTSecret

// bindJWTSecret adds --jwt-secret of the commands that sign or verify buyers' tokens with one secret.
func bindJWTSecret(f *pflag.FlagSet, p *string, usage string) {
	f.StringVar(p, "jwt-secret", defaultJWTSecret(), usage+" (env "+envJWTSecret+")")
	markSecret(f, "jwt-secret")
}

func defaultJWTSecret() string {
	if v := os.Getenv(envJWTSecret); v != "" {
		return v
	}
	return devJWTSecret
}
