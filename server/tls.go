package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// CertCheckEvery is how often, at most, the certificate files are looked at for a change: a
// renewed certificate (cert-manager, certbot) is served within this long, without a restart.
const CertCheckEvery = 2 * time.Second

// certReloader hands every TLS handshake the key pair of two files on disk, re-read when either
// file's modification time or size changed. The check runs in the handshake that finds the last
// one CertCheckEvery old, so an idle server does no work; a new pair that does not load (a key
// not yet written, a typo) is logged and the previous pair stays in service.
type certReloader struct {
	certFile, keyFile string
	every             time.Duration
	log               *slog.Logger
	now               func() time.Time

	cert    atomic.Pointer[tls.Certificate]
	checked atomic.Int64 // unix nanoseconds of the last look at the files
	mu      sync.Mutex   // one handshake looks at a time; the others serve the current pair
	stamp   fileStamps   // the files as they were when last loaded (or refused)
}

// fileStamps are what tells a changed file from the one already loaded.
type fileStamps [2]struct {
	mod  time.Time
	size int64
}

// newCertReloader loads the pair once; a pair that does not load at start is an error.
func newCertReloader(certFile, keyFile string, every time.Duration, log *slog.Logger, now func() time.Time) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, every: every, log: log, now: now}
	st, err := r.stamps()
	if err != nil {
		return nil, err
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", certFile, keyFile, err)
	}
	r.cert.Store(&pair)
	r.stamp = st
	r.checked.Store(now().UnixNano())
	return r, nil
}

func (r *certReloader) stamps() (fileStamps, error) {
	var st fileStamps
	for i, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return st, fmt.Errorf("TLS certificate: %w", err)
		}
		st[i].mod, st[i].size = fi.ModTime(), fi.Size()
	}
	return st, nil
}

// GetCertificate is tls.Config's: the current pair, looked at again when it is due.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := r.now()
	if now.UnixNano()-r.checked.Load() >= int64(r.every) && r.mu.TryLock() {
		r.checked.Store(now.UnixNano())
		r.reload()
		r.mu.Unlock()
	}
	return r.cert.Load(), nil
}

// reload re-reads the pair when the files changed since they were last read.
func (r *certReloader) reload() {
	st, err := r.stamps()
	if err != nil {
		r.log.Warn("TLS certificate files unreadable; still serving the previous certificate", "err", err)
		return
	}
	if st == r.stamp {
		return
	}
	r.stamp = st
	pair, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err == nil && pair.Leaf != nil && r.now().After(pair.Leaf.NotAfter) {
		err = errors.New("the new certificate expired at " + pair.Leaf.NotAfter.Format(time.RFC3339))
	}
	if err != nil {
		r.log.Warn("TLS certificate files changed but do not load; still serving the previous certificate",
			"cert", r.certFile, "key", r.keyFile, "err", err)
		return
	}
	r.cert.Store(&pair)
	r.log.Info("TLS certificate reloaded", "cert", r.certFile, "subject", pair.Leaf.Subject.String(),
		"not_after", pair.Leaf.NotAfter.Format(time.RFC3339))
}

// tlsConfig is the checkout's TLS: the reloaded pair, TLS 1.2 at least; HTTP/2 is offered
// (ALPN) by the http.Server that serves it.
func (s *Server) tlsConfig() (*tls.Config, error) {
	r, err := newCertReloader(s.cfg.TLSCertFile, s.cfg.TLSKeyFile, CertCheckEvery, s.log, s.now)
	if err != nil {
		return nil, err
	}
	return &tls.Config{GetCertificate: r.GetCertificate, MinVersion: tls.VersionTLS12}, nil
}
