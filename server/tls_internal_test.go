package server

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// TestCertReloaderKeepsTheOldPairOnABrokenOne: files that change into a pair that does not load
// keep the previous certificate in service (and say so in the log); fixed, the new one is served;
// nothing is looked at again before the check interval.
func TestCertReloaderKeepsTheOldPairOnABrokenOne(t *testing.T) {
	ca := testenv.NewCA(t, "reload CA")
	certFile, keyFile := ca.Server(t, "live", "127.0.0.1")
	newCert, newKey := ca.Server(t, "new", "127.0.0.1")
	var logs bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	r, err := newCertReloader(certFile, keyFile, time.Second, slog.New(slog.NewTextHandler(&logs, nil)), clock)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		c, err := r.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.SerialNumber.String()
	}
	old := serial()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// The certificate renewed, its key not yet: the pair does not match.
	copyFile(newCert, certFile)
	if now = now.Add(2 * time.Second); serial() != old {
		t.Fatal("a certificate without its key replaced the served pair")
	}
	if !strings.Contains(logs.String(), "still serving the previous certificate") {
		t.Errorf("no warning logged for the broken pair:\n%s", logs.String())
	}
	// The key arrives; before the interval nothing is looked at, after it the new pair is served.
	copyFile(newKey, keyFile)
	if now = now.Add(500 * time.Millisecond); serial() != old {
		t.Fatal("the files were looked at again before the check interval")
	}
	if now = now.Add(time.Second); serial() == old {
		t.Fatalf("the new pair is not served after the key arrived:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "TLS certificate reloaded") {
		t.Errorf("the reload is not logged:\n%s", logs.String())
	}
	// Garbage over both files keeps the new pair.
	served := serial()
	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if now = now.Add(2 * time.Second); serial() != served {
		t.Fatal("garbage replaced the served pair")
	}
}
