// Package stack runs the project's local service stack — Redis, PostgreSQL and a single-node KRaft
// Kafka — as plain processes under one folder, so tests and demos talk to the real services without Docker.
package stack

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// Environment variables read by DefaultConfig and EndpointsFromEnv.
const (
	EnvStackDir     = "FSCTL_STACK_DIR"
	EnvRedisURL     = "FSCTL_REDIS_URL"
	EnvPostgresURL  = "FSCTL_POSTGRES_URL"
	EnvKafkaBrokers = "FSCTL_KAFKA_BROKERS"
	// EnvRedisClusterURL points the cluster tests (and the user's eval of `fsctl stack env`) at
	// the local Redis Cluster.
	EnvRedisClusterURL = "FSCTL_REDIS_CLUSTER_URL"
	// EnvKafkaClusterBrokers points the replicated-Kafka tests at the local Kafka cluster.
	EnvKafkaClusterBrokers = "FSCTL_KAFKA_CLUSTER_BROKERS"
)

// Default ports, chosen away from the services' usual ports so a system Redis, PostgreSQL or Kafka
// on the same machine never collides with the stack.
const (
	DefaultRedisPort           = 16379
	DefaultPostgresPort        = 15432
	DefaultKafkaPort           = 19092
	DefaultKafkaControllerPort = 19093
)

// The default ports of a secure stack (and its folder, DefaultSecureDir), beside the plain one's,
// so both can run on one machine.
const (
	DefaultSecureRedisPort           = 16380
	DefaultSecurePostgresPort        = 15433
	DefaultSecureKafkaPort           = 19094
	DefaultSecureKafkaControllerPort = 19095
	DefaultSecureDir                 = ".stack-secure"
)

// PostgreSQL superuser and database created by the stack; trust auth, loopback only.
const (
	PostgresUser     = "fsctl"
	PostgresDatabase = "fsctl"
)

// Config says where the stack keeps its files and which loopback ports its services listen on.
type Config struct {
	Dir                 string // root of the stack's data, logs and pidfiles
	RedisPort           int    // Redis on 127.0.0.1
	PostgresPort        int    // PostgreSQL on 127.0.0.1
	KafkaPort           int    // Kafka broker listener on 127.0.0.1
	KafkaControllerPort int    // Kafka KRaft controller listener on 127.0.0.1
	KafkaLibs           string // folder of the Kafka broker's jars (filled by FetchKafka)
	// RedisCluster, when it has masters, adds a local Redis Cluster to the stack (remembered,
	// so later calls without it keep the cluster).
	RedisCluster ClusterLayout
	// KafkaCluster, when it has brokers, adds a local replicated Kafka to the stack (remembered
	// like the Redis Cluster).
	KafkaCluster KafkaLayout
	// Secure runs the stack in production posture (fsctl stack up --secure): TLS only, a CA of
	// its own, a password for every client. Recorded: a folder is secure or plain for good.
	Secure bool
	// Renew issues a secure stack's server certificate anew at Up, and restarts what runs.
	Renew bool
	// IssuerPort is a secure stack's identity provider on 127.0.0.1 (DefaultSecureIssuerPort).
	IssuerPort int
	// Executable is the fsctl binary a secure stack runs its identity provider with (`fsctl stack
	// issuer`); empty (a library or a test starting a stack) starts none.
	Executable string
	Log        io.Writer // progress lines; nil discards them
}

// DefaultConfig is the stack in ./.stack (or $FSCTL_STACK_DIR) on the default ports.
func DefaultConfig() Config {
	dir := os.Getenv(EnvStackDir)
	if dir == "" {
		dir = ".stack"
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return Config{
		Dir:                 dir,
		RedisPort:           DefaultRedisPort,
		PostgresPort:        DefaultPostgresPort,
		KafkaPort:           DefaultKafkaPort,
		KafkaControllerPort: DefaultKafkaControllerPort,
		KafkaLibs:           filepath.Join(dir, "kafka", "libs"),
		Log:                 os.Stdout,
	}
}

// Endpoints are the addresses clients use to reach the stack's services.
type Endpoints struct {
	RedisURL     string
	PostgresURL  string
	KafkaBrokers []string
	// RedisClusterURL is the local Redis Cluster's (redis+cluster://...), empty without one.
	RedisClusterURL string
	// KafkaClusterBrokers are the local replicated Kafka's brokers, empty without one.
	KafkaClusterBrokers []string
	// Credentials are what a client of a secure stack needs beside the addresses; nil for a
	// plain stack.
	Credentials *Credentials
	// Issuer is a secure stack's identity provider; nil for a plain stack.
	Issuer *Issuer
}

// Variables are the FSCTL_* settings (and libpq's PGPASSFILE) that make a client log in as c says:
// the files and the user as they are, each password as password(file) makes it — read for a
// process fsctl starts, or a shell's "$(cat file)" for a line a person sees.
func (c Credentials) Variables(password func(file string) (string, error)) ([][2]string, error) {
	redisPW, err := password(c.RedisPasswordFile)
	if err != nil {
		return nil, err
	}
	kafkaPW, err := password(c.KafkaPasswordFile)
	if err != nil {
		return nil, err
	}
	return [][2]string{
		{redisconn.EnvCA, c.CA}, {redisconn.EnvUser, c.User}, {redisconn.EnvPassword, redisPW},
		{"PGPASSFILE", c.PGPassFile},
		{kafkaconn.EnvTLS, "true"}, {kafkaconn.EnvCA, c.CA}, {kafkaconn.EnvSASL, kafkaconn.ScramSHA512},
		{kafkaconn.EnvUser, c.User}, {kafkaconn.EnvPassword, kafkaPW},
	}, nil
}

// ReadPassword is the password in one of a secure stack's password files (Secrets.Password, and
// Variables for a process fsctl starts).
func ReadPassword(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("secure stack password: %w (fsctl stack up --secure makes it)", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Credentials say how a client logs in to a secure stack: it trusts the stack's CA, logs in as
// User everywhere, and reads each password from a file (never from the command line).
type Credentials struct {
	CA                string // the stack's CA certificate
	User              string
	RedisPasswordFile string
	KafkaPasswordFile string
	PGPassFile        string // PostgreSQL's password as a pgpass file (PGPASSFILE)
}

// Endpoints returns the client addresses of the services this config starts.
func (c Config) Endpoints() Endpoints {
	e := Endpoints{
		RedisURL:     fmt.Sprintf("redis://127.0.0.1:%d/0", c.RedisPort),
		PostgresURL:  fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", PostgresUser, c.PostgresPort, PostgresDatabase),
		KafkaBrokers: []string{fmt.Sprintf("127.0.0.1:%d", c.KafkaPort)},
	}
	if c.Secure {
		s := c.secrets()
		e.RedisURL = fmt.Sprintf("rediss://127.0.0.1:%d/0", c.RedisPort)
		e.PostgresURL = fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=verify-full&sslrootcert=%s", PostgresUser, c.PostgresPort, PostgresDatabase, s.CA())
		e.Credentials = &Credentials{CA: s.CA(), User: SecureUser, RedisPasswordFile: s.PasswordFile("redis"),
			KafkaPasswordFile: s.PasswordFile("kafka"), PGPassFile: s.PGPassFile()}
		e.Issuer = c.issuer()
	}
	if c.RedisCluster.Masters > 0 {
		e.RedisClusterURL = c.RedisCluster.URL(c.Secure)
	}
	if c.KafkaCluster.Brokers > 0 {
		e.KafkaClusterBrokers = c.KafkaCluster.Addrs()
	}
	return e
}

// DefaultClusterLayout is the local cluster `fsctl stack up --redis-cluster 3` starts.
var DefaultClusterLayout = ClusterLayout{Masters: 3, Port: DefaultRedisClusterPort}

// DefaultEndpoints are the endpoints of a stack started with the default ports (and the default
// local cluster).
func DefaultEndpoints() Endpoints {
	return Config{
		RedisPort:    DefaultRedisPort,
		PostgresPort: DefaultPostgresPort,
		KafkaPort:    DefaultKafkaPort,
		RedisCluster: DefaultClusterLayout,
		KafkaCluster: DefaultKafkaLayout,
	}.Endpoints()
}

// EndpointsFromEnv is DefaultEndpoints overridden by FSCTL_REDIS_URL, FSCTL_POSTGRES_URL and
// FSCTL_KAFKA_BROKERS (comma separated).
func EndpointsFromEnv() Endpoints {
	return endpointsFrom(os.LookupEnv)
}

func endpointsFrom(lookup func(string) (string, bool)) Endpoints {
	e := DefaultEndpoints()
	if v, ok := lookup(EnvRedisURL); ok && strings.TrimSpace(v) != "" {
		e.RedisURL = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvPostgresURL); ok && strings.TrimSpace(v) != "" {
		e.PostgresURL = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvRedisClusterURL); ok && strings.TrimSpace(v) != "" {
		e.RedisClusterURL = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvKafkaClusterBrokers); ok {
		if brokers := SplitBrokers(v); len(brokers) > 0 {
			e.KafkaClusterBrokers = brokers
		}
	}
	if v, ok := lookup(EnvKafkaBrokers); ok {
		if brokers := SplitBrokers(v); len(brokers) > 0 {
			e.KafkaBrokers = brokers
		}
	}
	return e
}

// SplitBrokers parses a comma-separated broker list, dropping blanks (kafkaconn's one parser).
func SplitBrokers(s string) []string { return kafkaconn.SplitBrokers(s) }

// withDefaults fills zero fields, from the stack's record first (see Resolve), and makes Dir
// absolute: redis-server daemonizes into its own working directory, and PostgreSQL runs as another
// user, so relative paths would mean something else.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if c.Dir == "" {
		c.Dir = d.Dir
	}
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return c, fmt.Errorf("stack dir %s: %w", c.Dir, err)
	}
	c.Dir = abs
	if err := c.applyRecord(); err != nil {
		return c, err
	}
	if err := c.fillDefaults(d); err != nil {
		return c, err
	}
	named := map[string]int{"redis": c.RedisPort, "postgres": c.PostgresPort, "kafka": c.KafkaPort, "kafka controller": c.KafkaControllerPort}
	if c.Secure {
		named["issuer"] = c.IssuerPort
	}
	if err := c.clusterPorts(named); err != nil {
		return c, err
	}
	return c, distinctPorts(named)
}

// fillDefaults fills the zero ports (the secure stack's when Secure), the Kafka libraries (made
// absolute) and the log from d, DefaultConfig.
func (c *Config) fillDefaults(d Config) error {
	if c.Secure {
		d.RedisPort, d.PostgresPort, d.KafkaPort, d.KafkaControllerPort = DefaultSecureRedisPort, DefaultSecurePostgresPort, DefaultSecureKafkaPort, DefaultSecureKafkaControllerPort
	}
	if c.RedisPort == 0 {
		c.RedisPort = d.RedisPort
	}
	if c.PostgresPort == 0 {
		c.PostgresPort = d.PostgresPort
	}
	if c.KafkaPort == 0 {
		c.KafkaPort = d.KafkaPort
	}
	if c.KafkaControllerPort == 0 {
		c.KafkaControllerPort = d.KafkaControllerPort
	}
	if c.Secure && c.IssuerPort == 0 {
		c.IssuerPort = DefaultSecureIssuerPort
	}
	if c.KafkaLibs == "" {
		c.KafkaLibs = filepath.Join(c.Dir, "kafka", "libs")
	}
	var err error
	if c.KafkaLibs, err = filepath.Abs(c.KafkaLibs); err != nil {
		return fmt.Errorf("kafka libs %s: %w", c.KafkaLibs, err)
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// clusterPorts fills the clusters' first ports, checks their layouts and adds every port they
// take to named.
func (c *Config) clusterPorts(named map[string]int) error {
	if l := &c.RedisCluster; l.Masters > 0 {
		if l.Port == 0 {
			l.Port = DefaultRedisClusterPort
			if c.Secure {
				l.Port = DefaultSecureRedisClusterPort
			}
		}
		if err := l.validate(); err != nil {
			return err
		}
		for i := range l.Nodes() {
			named[fmt.Sprintf("redis cluster node %d", i)] = l.Port + i
			named[fmt.Sprintf("redis cluster node %d's bus", i)] = l.Port + i + 10000
		}
	}
	if l := &c.KafkaCluster; l.Brokers > 0 {
		if l.Port == 0 {
			l.Port = DefaultKafkaClusterPort
			if c.Secure {
				l.Port = DefaultSecureKafkaClusterPort
			}
		}
		if err := l.validate(); err != nil {
			return err
		}
		for i := range l.Brokers {
			named[fmt.Sprintf("kafka cluster broker %d", i+1)] = l.Port + i
			named[fmt.Sprintf("kafka cluster controller %d", i+1)] = l.Port + 100 + i
		}
	}
	return nil
}

// distinctPorts refuses a port out of range or two services on one port.
func distinctPorts(named map[string]int) error {
	ports := map[int]string{}
	for name, p := range named {
		if p <= 0 || p > 65535 {
			return fmt.Errorf("%s port %d out of range", name, p)
		}
		if other, dup := ports[p]; dup {
			return fmt.Errorf("%s and %s both on port %d", name, other, p)
		}
		ports[p] = name
	}
	return nil
}

func (c Config) redisDir() string { return filepath.Join(c.Dir, "redis") }
func (c Config) kafkaDir() string { return filepath.Join(c.Dir, "kafka") }

// fallbackDir is where PostgreSQL's files go when its OS user cannot reach Dir (e.g. under /root).
func (c Config) fallbackDir() string {
	sum := sha256.Sum256([]byte(c.Dir))
	return filepath.Join("/var/tmp", "fsctl-"+hex.EncodeToString(sum[:6]))
}
