package stack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/auth"
)

// A secure stack includes an identity provider, as the buyers of a hardened checkout get their
// tokens from one: an ES256 signing key under <dir>/issuer, and its JWKS and discovery document
// served over HTTPS (the stack's server certificate) on loopback by the fsctl binary itself
// (`fsctl stack issuer`, hidden). fsctl token and the bundled profile sign buyers' tokens with
// the key; fsctl serve --jwks-url verifies them against the JWKS.
const (
	// DefaultSecureIssuerPort is the issuer's port on a secure stack.
	DefaultSecureIssuerPort = 18443
	// IssuerAudience is the aud of the stack issuer's tokens, what the checkout checks.
	IssuerAudience = "fsctl-checkout"
)

// Issuer is what a client of a secure stack's identity provider needs: the iss and aud of its
// tokens, where its JWKS is and the CA its certificate chains to, and the signing key's file
// (0600; fsctl token and blast sign with it).
type Issuer struct {
	URL      string // the issuer (iss), https://127.0.0.1:<port>
	JWKSURL  string
	Audience string
	CA       string
	KeyFile  string
}

// issuer is the secure stack's identity provider, as clients see it.
func (c Config) issuer() *Issuer {
	if !c.Secure || c.IssuerPort == 0 {
		return nil
	}
	u := "https://" + issuerService{c}.addr()
	return &Issuer{URL: u, JWKSURL: u + auth.JWKSPath, Audience: IssuerAudience, CA: c.secrets().CA(), KeyFile: IssuerKeyFile(c.Dir)}
}

// IssuerKeyFile is the signing key of the secure stack in dir.
func IssuerKeyFile(dir string) string { return filepath.Join(dir, "issuer", "key.pem") }

// hasIssuer reports whether the stack runs an issuer: a secure one that knows the fsctl binary
// to run it with, or whose issuer runs already (so a Down without the binary still stops it).
func (c Config) hasIssuer() bool {
	if !c.Secure || c.IssuerPort == 0 {
		return false
	}
	return c.Executable != "" || issuerService{c}.status().Running
}

// issuerService is the fsctl binary serving the issuer's documents, detached like the brokers.
type issuerService struct{ c Config }

func (s issuerService) dir() string     { return filepath.Join(s.c.Dir, "issuer") }
func (s issuerService) pidFile() string { return filepath.Join(s.dir(), "issuer.pid") }
func (s issuerService) logFile() string { return filepath.Join(s.dir(), "issuer.log") }
func (s issuerService) addr() string    { return fmt.Sprintf("127.0.0.1:%d", s.c.IssuerPort) }

// want is what the issuer's command line holds: its subcommand and this stack's folder, so a pid
// reused by anything else (another stack's issuer included) is not taken for it.
func (s issuerService) want() string { return "issuer\x00--dir\x00" + s.c.Dir + "\x00" }

func (s issuerService) args() []string {
	return []string{"stack", "issuer", "--dir", s.c.Dir, "--addr", s.addr()}
}

func (s issuerService) status() ServiceStatus {
	pid, ok := pidFromFile(s.pidFile(), s.want())
	return ServiceStatus{Name: "issuer", Address: s.addr(), PID: pid, Running: ok, DataDir: s.dir(), LogFile: s.logFile()}
}

func (s issuerService) up(ctx context.Context, log io.Writer) (int, bool, error) {
	if pid, ok := pidFromFile(s.pidFile(), s.want()); ok {
		return pid, false, s.wait(ctx, func() error { return nil })
	}
	if s.c.Executable == "" {
		return 0, false, errors.New("no fsctl binary to run the issuer with")
	}
	if portTaken(s.c.IssuerPort) {
		return 0, false, fmt.Errorf("port %d is taken by a process this stack did not start; stop it or pick another --issuer-port", s.c.IssuerPort)
	}
	if err := os.MkdirAll(s.dir(), 0o700); err != nil {
		return 0, false, err
	}
	made, err := ensureIssuerKey(s.c.Dir)
	if err != nil {
		return 0, false, err
	}
	if made != nil {
		fmt.Fprintf(log, "%-9s signing key %s (ES256, kid %s)\n", "issuer", IssuerKeyFile(s.c.Dir), made.KID)
	}
	cmd, exited, err := startDetached(s.c.Executable, s.args(), s.dir(), s.logFile())
	if err != nil {
		return 0, false, err
	}
	pid := cmd.Process.Pid
	if err := os.WriteFile(s.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		_ = stopPID(ctx, pid, s.want(), 5*time.Second)
		return 0, false, err
	}
	if err := s.wait(ctx, exitedFunc(exited)); err != nil {
		_ = stopPID(context.WithoutCancel(ctx), pid, s.want(), 5*time.Second)
		_ = os.Remove(s.pidFile())
		return 0, false, err
	}
	return pid, true, nil
}

// wait returns once the issuer serves its JWKS over TLS that the stack's CA verifies.
func (s issuerService) wait(ctx context.Context, dead func() error) error {
	tc, err := s.c.clientTLS()
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	jwks := s.c.issuer().JWKSURL
	err = waitReady(ctx, 10*time.Second, dead, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwks, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", jwks, resp.Status)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w\nlog %s:\n%s", err, s.logFile(), tail(s.logFile(), 20))
	}
	return nil
}

func (s issuerService) down(ctx context.Context) error {
	pid, ok := pidFromFile(s.pidFile(), s.want())
	if !ok {
		return nil
	}
	if err := stopPID(ctx, pid, s.want(), 5*time.Second); err != nil {
		return err
	}
	_ = os.Remove(s.pidFile())
	return nil
}

// ensureIssuerKey makes the stack's ES256 signing key (0600) unless it exists; it returns the
// key it made, nil when there was one.
func ensureIssuerKey(dir string) (*auth.SigningKey, error) {
	path := IssuerKeyFile(dir)
	if fileExists(path) {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := writeKey(path, key); err != nil {
		return nil, fmt.Errorf("issuer key: %w", err)
	}
	return auth.NewSigningKey(key)
}

// ServeIssuer serves the secure stack's identity provider in dir on addr until ctx ends: the
// JWKS of its signing key and the discovery document, over TLS with the stack's server
// certificate. The key file is read on every request: one replaced by another is published at
// once (a rotation, for a verifier to follow). It is what `fsctl stack issuer` runs.
func ServeIssuer(ctx context.Context, dir, addr string, log *slog.Logger) error {
	sec := Secrets{Dir: dir}
	pair, err := tls.LoadX509KeyPair(sec.ServerCert(), sec.ServerKey())
	if err != nil {
		return fmt.Errorf("the stack's server certificate: %w", err)
	}
	key, err := auth.LoadSigningKey(IssuerKeyFile(dir))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	issuer := "https://" + addr
	keys := func() ([]*auth.SigningKey, error) {
		k, err := auth.LoadSigningKey(IssuerKeyFile(dir))
		if err != nil {
			log.Error("signing key unreadable", "err", err)
			return nil, err
		}
		return []*auth.SigningKey{k}, nil
	}
	srv := &http.Server{
		Handler:           auth.IssuerHandler(issuer, keys),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 5 * time.Second,
	}
	log.Info("issuer serving", "issuer", issuer, "jwks", issuer+auth.JWKSPath, "kid", key.KID, "alg", key.Method.Alg())
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
