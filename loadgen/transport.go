package loadgen

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// HTTP versions a plan can ask for (fsctl blast --http).
const (
	// HTTPAuto, the default ("" too), offers h2 and HTTP/1.1 in an https:// target's TLS
	// handshake (ALPN) and speaks whichever the target picks; a plain http:// target gets
	// HTTP/1.1, since nothing on the wire says whether it would take h2c.
	HTTPAuto = "auto"
	// HTTP1 speaks HTTP/1.1 only.
	HTTP1 = "1.1"
	// HTTP2 speaks HTTP/2 only: h2 over TLS, and h2c with prior knowledge to an http:// target.
	HTTP2 = "2"
)

// validHTTP refuses an HTTP version the client cannot be set to.
func validHTTP(v string) error {
	switch v {
	case "", HTTPAuto, HTTP1, HTTP2:
		return nil
	}
	return fmt.Errorf("http %q: want %s, %s or %s", v, HTTPAuto, HTTP1, HTTP2)
}

// TLSFiles are how to reach a TLS target: the files and names fsctl blast's and fsctl health's
// TLS flags give. The zero value is the system's roots and the URL's host name.
type TLSFiles struct {
	// CACert is a PEM file of the authorities the target's certificate must chain to; it
	// replaces the system's roots, as curl's --cacert does, so a private CA is all it trusts.
	CACert string
	// Cert and Key are the client certificate and its key, for a target that asks for one.
	Cert, Key string
	// ServerName is sent in SNI and checked against the certificate instead of the URL's host
	// (a target reached by address, or through a tunnel).
	ServerName string
	// Insecure skips verifying the target's certificate: anyone on the path can read and change
	// the traffic. For tests against a throwaway certificate only.
	Insecure bool
}

// Config builds the TLS settings the files describe; nil when they describe nothing beyond the
// defaults.
func (f TLSFiles) Config() (*tls.Config, error) {
	if f == (TLSFiles{}) {
		return nil, nil
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, errors.New("--cert and --key go together: the client certificate and its private key")
	}
	cfg := &tls.Config{ServerName: f.ServerName, InsecureSkipVerify: f.Insecure, MinVersion: tls.VersionTLS12}
	if f.CACert != "" {
		pem, err := os.ReadFile(f.CACert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s: no PEM certificate in it", f.CACert)
		}
	}
	if f.Cert != "" {
		pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("--cert %s / --key %s: %w", f.Cert, f.Key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// NewClient is the client every request of a plan goes through: at most conns connections to
// the one host (requests beyond them queue, HTTP/1.1, or share one as streams, HTTP/2), the
// plan's TLS settings and HTTP version. Its timeout bounds a request including the wait for a
// connection, as a buyer sees it.
func (p Plan) NewClient(conns int, timeout time.Duration) *http.Client {
	return NewClient(p.TLS, p.HTTP, conns, timeout)
}

// NewClient is Plan.NewClient for a caller without a plan (fsctl health): tlsCfg may be nil,
// version is one of HTTPAuto, HTTP1, HTTP2.
func NewClient(tlsCfg *tls.Config, version string, conns int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsCfg.Clone(),
		TLSHandshakeTimeout: 10 * time.Second,
		MaxConnsPerHost:     conns,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		Protocols:           protocols(version),
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// protocols is what the client offers for an HTTP version. Without HTTP/1 the transport speaks
// h2c with prior knowledge to an http:// URL and offers only h2 to an https:// one.
func protocols(version string) *http.Protocols {
	var ps http.Protocols
	switch version {
	case HTTP1:
		ps.SetHTTP1(true)
	case HTTP2:
		ps.SetHTTP2(true)
		ps.SetUnencryptedHTTP2(true)
	default:
		ps.SetHTTP1(true)
		ps.SetHTTP2(true)
	}
	return &ps
}

// Protocol names what a record's request went over: h2 (HTTP/2 over TLS), h2c (HTTP/2 in plain
// text), HTTP/1.1 or "HTTP/1.1 over TLS"; "" when it got no answer.
func (r Record) Protocol() string {
	if r.Proto == "" {
		return ""
	}
	// The scheme's prefix, not url.Parse: this runs for every record of the report.
	secure := len(r.URL) >= len("https:") && strings.EqualFold(r.URL[:len("https:")], "https:")
	switch {
	case r.Proto == "HTTP/2.0" && secure:
		return "h2"
	case r.Proto == "HTTP/2.0":
		return "h2c"
	case secure:
		return r.Proto + " over TLS"
	}
	return r.Proto
}

// TLSHint is the flag that fixes a failed first contact with a TLS target, said in a sentence:
// an unknown authority, a certificate for another name, a target that wants a client
// certificate; "" for any other error.
func TLSHint(err error) string {
	if err == nil {
		return ""
	}
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	// crypto/tls reports a peer's alert as an unexported type: only its text names it.
	msg := err.Error()
	switch {
	case errors.As(err, &unknown):
		return "the target's certificate is signed by an authority this machine does not trust; " +
			"give that authority's certificate with --cacert FILE, or skip verification with --insecure (tests only)"
	case errors.As(err, &host):
		return "give the name the certificate is for with --server-name NAME"
	case strings.Contains(msg, "tls: certificate required") || strings.Contains(msg, "tls: bad certificate"):
		return "the target wants a client certificate it trusts: give it with --cert FILE --key FILE"
	}
	return ""
}
