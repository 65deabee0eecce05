package stack

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// A secure stack (`fsctl stack up --secure`) runs every service the way a hardened production one
// does: TLS only, with certificates from a certificate authority of its own, and a password for
// every client. These are its users and the lifetimes of its certificates.
const (
	// SecureUser is the user fsctl and the checkout log in as: on Redis an ACL user with only what
	// the checkout needs, on Kafka a SCRAM-SHA-512 user, on PostgreSQL the database's owner.
	SecureUser = "fsctl"
	// adminUser is what the stack itself logs in as where the checkout's rights fall short: Redis
	// replication, cluster formation and faults, and Kafka's brokers among themselves.
	adminUser      = "fsctl-admin"
	caLifetime     = 5 * 365 * 24 * time.Hour
	serverLifetime = 90 * 24 * time.Hour
	// RenewBefore is how long before it expires a server certificate is renewed by `stack up`
	// (and what preflight warns about).
	RenewBefore = 14 * 24 * time.Hour
)

// Secrets are the files of a secure stack: its CA, the server certificate every service presents
// (for 127.0.0.1, ::1 and localhost) and the generated passwords, each 0600, under <dir>/tls and
// <dir>/secrets.
type Secrets struct {
	Dir string // the stack's folder
}

// CA is the certificate authority's certificate, what clients trust (FSCTL_*_CA).
func (s Secrets) CA() string         { return filepath.Join(s.Dir, "tls", "ca.pem") }
func (s Secrets) caKey() string      { return filepath.Join(s.Dir, "tls", "ca.key") }
func (s Secrets) ServerCert() string { return filepath.Join(s.Dir, "tls", "server.pem") }
func (s Secrets) ServerKey() string  { return filepath.Join(s.Dir, "tls", "server.key") }
func (s Secrets) passwordFile(name string) string {
	return filepath.Join(s.Dir, "secrets", name+"-password")
}

// PasswordFile is the file holding one service's password for SecureUser: "redis", "postgres"
// or "kafka".
func (s Secrets) PasswordFile(service string) string { return s.passwordFile(service) }

// PGPassFile is the pgpass file (PGPASSFILE) holding the PostgreSQL password of SecureUser.
func (s Secrets) PGPassFile() string { return filepath.Join(s.Dir, "secrets", "pgpass") }

// Password reads one generated password.
func (s Secrets) Password(name string) (string, error) { return ReadPassword(s.passwordFile(name)) }

// The passwords a secure stack generates: the checkout's on each service, and the stack's own
// admin logins on Redis and Kafka.
var passwordNames = []string{"redis", "redis-admin", "postgres", "kafka", "kafka-admin"}

// ensure makes whatever of the CA, the server certificate and the passwords is missing; renew
// issues a new server certificate even when the old one is still good, as does one that expires
// within RenewBefore. It reports whether the certificate changed (running services must restart).
func (s Secrets) ensure(renew bool, log io.Writer) (renewed bool, err error) {
	for _, d := range []string{filepath.Dir(s.CA()), filepath.Dir(s.passwordFile("x"))} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return false, err
		}
	}
	for _, name := range passwordNames {
		if fileExists(s.passwordFile(name)) {
			continue
		}
		if err := writeSecret(s.passwordFile(name), []byte(newPassword()+"\n")); err != nil {
			return false, err
		}
	}
	ca, caKey, err := s.loadCA()
	if errors.Is(err, os.ErrNotExist) {
		if ca, caKey, err = s.newCA(); err == nil {
			fmt.Fprintf(log, "%-9s certificate authority %s (valid until %s)\n", "tls", s.CA(), ca.NotAfter.UTC().Format(time.DateOnly))
		}
	}
	if err != nil {
		return false, err
	}
	if !renew {
		if cert, err := ServerCertificate(s.Dir); err == nil && time.Until(cert.NotAfter) > RenewBefore && cert.CheckSignatureFrom(ca) == nil {
			return false, nil
		}
	}
	cert, err := s.issueServer(ca, caKey)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(log, "%-9s server certificate %s for 127.0.0.1, ::1, localhost (valid until %s)\n", "tls", s.ServerCert(), cert.NotAfter.UTC().Format(time.DateOnly))
	return true, nil
}

// ServerCertificate is the certificate a secure stack's services present now.
func ServerCertificate(dir string) (*x509.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(Secrets{dir}.ServerCert(), Secrets{dir}.ServerKey())
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(pair.Certificate[0])
}

func (s Secrets) loadCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(s.CA(), s.caKey())
	if err != nil {
		if fileExists(s.CA()) || fileExists(s.caKey()) {
			return nil, nil, fmt.Errorf("the stack's CA (%s): %w", s.CA(), err)
		}
		return nil, nil, os.ErrNotExist
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("the stack's CA key %s is not an ECDSA key", s.caKey())
	}
	return cert, key, nil
}

func (s Secrets) newCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(), Subject: pkix.Name{CommonName: "fsctl local stack CA", Organization: []string{"fsctl"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caLifetime),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(s.caKey(), key); err != nil {
		return nil, nil, err
	}
	return cert, key, os.WriteFile(s.CA(), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// issueServer signs a new server certificate for the loopback names, valid serverLifetime.
func (s Secrets) issueServer(ca *x509.Certificate, caKey *ecdsa.PrivateKey) (*x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(), Subject: pkix.Name{CommonName: "localhost", Organization: []string{"fsctl"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(serverLifetime),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		// Client auth too: Kafka's brokers and Redis's replicas present it to each other.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if err := writeKey(s.ServerKey(), key); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.ServerCert(), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// keystore is the server's key and certificate chain in one PEM file, the form Kafka's PEM
// keystore reads.
func (s Secrets) keystore() ([]byte, error) {
	key, err := os.ReadFile(s.ServerKey())
	if err != nil {
		return nil, err
	}
	cert, err := os.ReadFile(s.ServerCert())
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(s.CA())
	if err != nil {
		return nil, err
	}
	return append(append(key, cert...), ca...), nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writeSecret(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// writeSecret writes a file only its owner can read, replacing any older one whole.
func writeSecret(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// newPassword is 32 hex characters of crypto/rand: safe in a URL, a properties file and a shell.
func newPassword() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}
