package stack

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/auth"
)

// TestIssuerService runs a secure stack's identity provider as stack up does, from the fsctl
// binary: it makes the signing key (0600), serves its JWKS over TLS that the stack's CA verifies,
// a token the key signs passes a JWKS verifier of the stack's issuer, and down stops it, even from
// a config that does not know the binary.
func TestIssuerService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the fsctl binary")
	}
	bin := filepath.Join(t.TempDir(), "fsctl")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/fsctl").CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/fsctl: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c, err := Config{Dir: t.TempDir(), Secure: true, IssuerPort: port, Executable: bin}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.secrets().ensure(false, io.Discard); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := issuerService{c}
	pid, started, err := s.up(ctx, io.Discard)
	if err != nil || !started {
		t.Fatalf("issuer up: pid %d started %v: %v", pid, started, err)
	}
	t.Cleanup(func() { _ = s.down(context.Background()) })
	if fi, err := os.Stat(IssuerKeyFile(c.Dir)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("signing key %v, %v; want 0600", fi, err)
	}

	is := c.Endpoints().Issuer
	if is == nil || is.KeyFile != IssuerKeyFile(c.Dir) || is.CA != c.secrets().CA() || is.Audience != IssuerAudience {
		t.Fatalf("endpoints' issuer %+v", is)
	}
	v, err := auth.NewJWKSVerifier(ctx, []byte("the-checkouts-own-secret"), auth.JWKSConfig{URL: is.JWKSURL, Issuer: is.URL, Audience: is.Audience, CAFile: is.CA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Ready(ctx); err != nil {
		t.Fatalf("the stack's JWKS: %v", err)
	}
	key, err := auth.LoadSigningKey(is.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := key.Mint("alice", is.URL, is.Audience, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if user, err := v.Verify(tok); err != nil || user != "alice" {
		t.Fatalf("a token of the stack's key: (%q, %v)", user, err)
	}

	// A second up finds it running; a config without the binary still lists it, so down stops it.
	if again, started, err := s.up(ctx, io.Discard); err != nil || started || again != pid {
		t.Fatalf("second up: pid %d started %v: %v; want %d running", again, started, err, pid)
	}
	bare := c
	bare.Executable = ""
	if err := down(ctx, bare); err != nil {
		t.Fatal(err)
	}
	if st := s.status(); st.Running || fileExists(s.pidFile()) {
		t.Fatalf("after down: %+v", st)
	}
	if bare.hasIssuer() {
		t.Fatal("a stopped issuer without the binary to start it is still a service of the stack")
	}
}
