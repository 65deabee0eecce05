package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// AsymmetricMethods are the algorithms a JWKS verifier accepts. HS256 is not among them: with a
// public key set, an HMAC token could be signed with the public key's bytes as its secret (the
// HS/RS confusion), and "none" never verifies.
var AsymmetricMethods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Defaults of JWKSConfig.
const (
	// DefaultJWKSRefresh is how often the key set is fetched again on its own: a key the issuer
	// withdrew stops verifying within it.
	DefaultJWKSRefresh = 15 * time.Minute
	// DefaultUnknownKIDRefresh is the least time between two fetches a token with an unknown kid
	// (a rotated key) makes: a client spraying made-up kids costs the issuer one fetch in it.
	DefaultUnknownKIDRefresh = 30 * time.Second
	// DefaultJWKSTimeout bounds one fetch of the key set, and how long a token with an unknown kid
	// waits for one.
	DefaultJWKSTimeout = 5 * time.Second
)

// JWKSConfig says where an identity provider publishes the keys that sign buyers' tokens and
// what else a token of its must say.
type JWKSConfig struct {
	// URL is the issuer's JWKS (its jwks_uri): https, or http on a loopback address only.
	URL string
	// Issuer, when set, is the one iss a token may carry.
	Issuer string
	// Audience, when set, must be among a token's aud.
	Audience string
	// CAFile, when set, is the only CA trusted for URL's certificate (an issuer whose certificate
	// a private CA signed); empty trusts the system's roots.
	CAFile string
	// Refresh, UnknownKIDRefresh and Timeout default to DefaultJWKSRefresh,
	// DefaultUnknownKIDRefresh and DefaultJWKSTimeout.
	Refresh, UnknownKIDRefresh, Timeout time.Duration
	// Log hears about failed fetches; nil discards.
	Log *slog.Logger
}

// jwksKeys is a JWKS verifier's key set, for its readiness.
type jwksKeys struct {
	url     string
	storage jwkset.Storage
	mu      sync.Mutex
	lastErr error // the last failed fetch, nil once one succeeds
}

// readyProbeKID is a kid no issuer uses: reading it, while no key is known, fetches the key set
// through the unknown-kid path and its rate limit.
const readyProbeKID = "fsctl-readiness-probe"

// NewJWKSVerifier returns a verifier of tokens an identity provider signs, checked against the
// keys of its JWKS through keyfunc: the set is fetched now and every cfg.Refresh, and again when
// a token names a kid the set lacks (a rotation), at most once per cfg.UnknownKIDRefresh. Only
// AsymmetricMethods verify; iss and aud are checked when cfg names them. An issuer that does not
// answer now is no error: the verifier refuses every token and Ready says why until it does.
// secret keys the server's own signatures (DeriveKey), as with NewVerifier. ctx ends the
// background fetches.
func NewJWKSVerifier(ctx context.Context, secret []byte, cfg JWKSConfig, now func() time.Time) (*Verifier, error) {
	client, err := cfg.client()
	if err != nil {
		return nil, err
	}
	var extra []jwt.ParserOption
	if cfg.Issuer != "" {
		extra = append(extra, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		extra = append(extra, jwt.WithAudience(cfg.Audience))
	}
	v, err := newVerifier(secret, now, AsymmetricMethods, extra...)
	if err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	keys := &jwksKeys{url: cfg.URL}
	remote, err := jwkset.NewStorageFromHTTP(cfg.URL, jwkset.HTTPClientStorageOptions{
		Client: client, Ctx: ctx, HTTPTimeout: orDefault(cfg.Timeout, DefaultJWKSTimeout),
		RefreshInterval: orDefault(cfg.Refresh, DefaultJWKSRefresh),
		// The first fetch failing is logged and retried, not fatal: see Ready.
		NoErrorReturnFirstHTTPReq: true,
		RefreshErrorHandler: func(_ context.Context, err error) {
			keys.setErr(err)
			log.Warn("fetching the identity provider's JWKS failed; the keys fetched before (if any) stay in use", "url", cfg.URL, "err", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("--jwks-url: %w", err)
	}
	keys.storage, err = jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs: map[string]jwkset.Storage{cfg.URL: remote},
		// Bounds both the wait for the limiter and the fetch: a request with an unknown kid
		// waits at most this long, and one that would wait longer is refused at once.
		RateLimitWaitMax:  orDefault(cfg.Timeout, DefaultJWKSTimeout),
		RefreshUnknownKID: rate.NewLimiter(rate.Every(orDefault(cfg.UnknownKIDRefresh, DefaultUnknownKIDRefresh)), 1),
	})
	if err != nil {
		return nil, fmt.Errorf("--jwks-url: %w", err)
	}
	// A key published for encryption ("use": "enc") never verifies a signature; one without a
	// use may.
	kf, err := keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: keys.storage, UseWhitelist: []jwkset.USE{jwkset.UseSig, ""}})
	if err != nil {
		return nil, fmt.Errorf("--jwks-url: %w", err)
	}
	v.keyfunc, v.jwks = kf.Keyfunc, keys
	return v, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Validate checks what can be checked before any fetch: the URL's form and scheme and the CA
// file, so a command refuses a wrong set-up before it dials anything.
func (cfg JWKSConfig) Validate() error {
	_, err := cfg.client()
	return err
}

// client is the HTTP client of the JWKS fetches: TLS verified against CAFile when set; plain
// HTTP refused beyond loopback, where anyone on the path could hand the server keys of theirs.
func (cfg JWKSConfig) client() (*http.Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--jwks-url %q: not an absolute URL", cfg.URL)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
	default:
		return nil, fmt.Errorf("--jwks-url %s: must be https (http only on a loopback address): whoever can change the key set mints any buyer", cfg.URL)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--jwks-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--jwks-ca %s: no PEM certificate in it", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: orDefault(cfg.Timeout, DefaultJWKSTimeout)}, nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (k *jwksKeys) setErr(err error) {
	k.mu.Lock()
	k.lastErr = err
	k.mu.Unlock()
}

// count is how many keys the set holds now.
func (k *jwksKeys) count(ctx context.Context) int {
	all, err := k.storage.KeyReadAll(ctx)
	if err != nil {
		return 0
	}
	return len(all)
}

// Ready reports whether the verifier can verify a token: always for HS256; with a JWKS, once
// the set holds a key. While it holds none (the issuer was unreachable at start, or publishes
// nothing) each call asks the issuer again, at the unknown-kid rate, so an instance that no
// traffic reaches before it is ready still becomes ready when the issuer answers.
func (v *Verifier) Ready(ctx context.Context) error {
	k := v.jwks
	if k == nil || k.count(ctx) > 0 {
		return nil
	}
	_, err := k.storage.KeyRead(ctx, readyProbeKID)
	if k.count(ctx) > 0 {
		k.setErr(nil)
		return nil
	}
	k.mu.Lock()
	last := k.lastErr
	k.mu.Unlock()
	switch {
	case last != nil:
		err = last
	case errors.Is(err, jwkset.ErrKeyNotFound):
		err = errors.New("the set has no key")
	}
	return fmt.Errorf("no signing key from %s yet, every token is refused: %v", k.url, err)
}
