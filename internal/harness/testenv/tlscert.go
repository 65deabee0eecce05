package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a throwaway certificate authority for TLS tests: a private CA a client must be told
// about (fsctl blast --cacert), and the server and client certificates it signs.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the CA's certificate as a PEM file, what --cacert takes.
	File string
	dir  string
}

// NewCA makes a CA named name whose files live in a temporary directory of the test.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	ca := &CA{cert: cert, key: key, dir: tb.TempDir()}
	ca.File = filepath.Join(ca.dir, "ca.pem")
	writePEM(tb, ca.File, "CERTIFICATE", der)
	return ca
}

// Pool is a cert pool holding only the CA, for a server that checks client certificates.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Server issues a server certificate for hosts (names or IP addresses) and writes it and its key
// as PEM files named <file>.pem and <file>.key; it returns their paths.
func (ca *CA) Server(tb testing.TB, file string, hosts ...string) (certFile, keyFile string) {
	tb.Helper()
	return ca.issue(tb, file, ca.server(tb, file, hosts))
}

// Expired issues a server certificate for hosts, written like Server's, that expired an hour ago
// (valid for the day before): what a server left on a certificate nobody renewed presents.
func (ca *CA) Expired(tb testing.TB, file string, hosts ...string) (certFile, keyFile string) {
	tb.Helper()
	tmpl := ca.server(tb, file, hosts)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-25*time.Hour), time.Now().Add(-time.Hour)
	return ca.issue(tb, file, tmpl)
}

// server is the template of a server certificate for hosts (names or IP addresses).
func (ca *CA) server(tb testing.TB, name string, hosts []string) *x509.Certificate {
	tmpl := ca.leaf(tb, name, x509.ExtKeyUsageServerAuth)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return tmpl
}

// Client issues a client certificate for user, written like Server's.
func (ca *CA) Client(tb testing.TB, file, user string) (certFile, keyFile string) {
	tb.Helper()
	tmpl := ca.leaf(tb, user, x509.ExtKeyUsageClientAuth)
	return ca.issue(tb, file, tmpl)
}

func (ca *CA) leaf(tb testing.TB, name string, usage x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(tb), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
}

func (ca *CA) issue(tb testing.TB, file string, tmpl *x509.Certificate) (string, string) {
	tb.Helper()
	key := newKey(tb)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	certFile, keyFile := filepath.Join(ca.dir, file+".pem"), filepath.Join(ca.dir, file+".key")
	writePEM(tb, certFile, "CERTIFICATE", der)
	writePEM(tb, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func writePEM(tb testing.TB, path, kind string, der []byte) {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
}
