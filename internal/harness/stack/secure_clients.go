package stack

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// secrets are the stack's secure files (meaningful only when c.Secure).
func (c Config) secrets() Secrets { return Secrets{Dir: c.Dir} }

// clientTLS trusts the stack's CA only; nil for a plain stack.
func (c Config) clientTLS() (*tls.Config, error) {
	if !c.Secure {
		return nil, nil
	}
	pem, err := os.ReadFile(c.secrets().CA())
	if err != nil {
		return nil, fmt.Errorf("the stack's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the stack's CA %s holds no certificate", c.secrets().CA())
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// redisAdmin is a client of one of the stack's Redis nodes as the stack itself: plain, or over TLS
// as the admin user (replication, cluster formation, faults need more than the checkout's user).
func (c Config) redisAdmin(addr string) (*redis.Client, error) {
	o := &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second}
	if c.Secure {
		var err error
		if o.TLSConfig, err = c.clientTLS(); err != nil {
			return nil, err
		}
		o.Username = adminUser
		if o.Password, err = c.secrets().Password("redis-admin"); err != nil {
			return nil, err
		}
	}
	return redis.NewClient(o), nil
}

// kafkaAdmin is how the stack itself reaches brokers: plaintext, or SASL_SSL as the brokers' own
// SCRAM user.
func (c Config) kafkaAdmin(brokers ...string) (kafkaconn.Conn, error) {
	conn := kafkaconn.Conn{Brokers: brokers}
	if !c.Secure {
		return conn, nil
	}
	pw, err := c.secrets().Password("kafka-admin")
	if err != nil {
		return conn, err
	}
	conn.TLS = kafkaconn.TLS{Enabled: true, CA: c.secrets().CA()}
	conn.SASL = kafkaconn.SASL{Mechanism: kafkaconn.ScramSHA512, User: adminUser, Password: pw}
	return conn, nil
}

// postgresURL is the URL of one database as the stack's user: with its password and verify-full
// TLS on a secure stack (the password is for the stack's own connections, never printed).
func (c Config) postgresURL(db string) (string, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", c.PostgresPort)
	if !c.Secure {
		return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", PostgresUser, addr, db), nil
	}
	pw, err := c.secrets().Password("postgres")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=verify-full&sslrootcert=%s",
		url.UserPassword(PostgresUser, pw).String(), addr, db, url.QueryEscape(c.secrets().CA())), nil
}

// redisACL is a secure Redis's users: the default user off; the stack's admin with every right;
// the checkout's user with what the checkout does and no more: the sale's keys (fs:…, the
// {fs:…} hash tags and the waiting room's {fs-room:…}), its scripts, reads and writes, the cluster's topology and INFO (which
// preflight reads), WAIT for waitReplicas, and no administration (no FLUSHALL, CONFIG SET,
// DEBUG, SHUTDOWN, KEYS).
func redisACL(checkoutPassword, adminPassword string) string {
	return strings.Join([]string{
		"user default off",
		"user " + adminUser + " on >" + adminPassword + " ~* &* +@all",
		"user " + SecureUser + " on >" + checkoutPassword + " " + CheckoutRedisRights,
	}, "\n") + "\n"
}

// CheckoutRedisRights are the ACL rules of the checkout's Redis user on a secure stack: the
// rights preflight checks a production user for.
const CheckoutRedisRights = "resetkeys ~fs:* ~{fs:* ~{fs-room:* resetchannels &fs:* -@all +@read +@write +@scripting +@transaction +@connection +@keyspace +@pubsub -@dangerous " +
	"+time +info +cluster|slots +cluster|shards +cluster|nodes +cluster|info +cluster|myid +wait +scan +memory|usage +config|get"
