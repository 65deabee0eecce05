package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Security is what a secured Redis asks of a client beside its address: the CA its certificate
// chains to, a client certificate (for tls-auth-clients yes), the name its certificate holds, and
// an ACL user and password. An address says them as query parameters (ca, cert, key,
// server_name; the user and password as in any URL), and FSCTL_REDIS_* complete what it leaves out.
type Security struct {
	CA, Cert, Key, ServerName string
	User, Password            string
}

// securityParams are the query parameters of an address that Parse takes itself (go-redis knows
// none of them).
var securityParams = []string{"ca", "cert", "key", "server_name"}

// SecurityFromEnv reads FSCTL_REDIS_CA, _CERT, _KEY, _SERVER_NAME, _USER and _PASSWORD.
func SecurityFromEnv(lookup func(string) (string, bool)) Security {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	pw, _ := lookup(EnvPassword)
	return Security{CA: get(EnvCA), Cert: get(EnvCert), Key: get(EnvKey), ServerName: get(EnvServerName), User: get(EnvUser), Password: pw}
}

// splitSecurity takes the security parameters out of raw's query, so go-redis parses the rest.
func splitSecurity(raw string) (string, Security, error) {
	base, query, ok := strings.Cut(raw, "?")
	if !ok {
		return raw, Security{}, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return raw, Security{}, nil // Parse reports it with the address
	}
	s := Security{CA: q.Get("ca"), Cert: q.Get("cert"), Key: q.Get("key"), ServerName: q.Get("server_name")}
	for _, p := range securityParams {
		q.Del(p)
	}
	if len(q) == 0 {
		return base, s, nil
	}
	return base + "?" + q.Encode(), s, nil
}

// or fills what s leaves out from d.
func (s Security) or(d Security) Security {
	for _, f := range []struct {
		to   *string
		from string
	}{
		{&s.CA, d.CA}, {&s.Cert, d.Cert}, {&s.Key, d.Key}, {&s.ServerName, d.ServerName}, {&s.User, d.User}, {&s.Password, d.Password},
	} {
		if *f.to == "" {
			*f.to = f.from
		}
	}
	return s
}

// tlsConfig completes go-redis's TLS settings of a rediss address with the files; an error
// names the part that is wrong.
func (s Security) tlsConfig(base *tls.Config) (*tls.Config, error) {
	if base == nil {
		if s.CA != "" || s.Cert != "" || s.ServerName != "" {
			return nil, fmt.Errorf("ca, cert and server_name (or %s, %s, %s) need TLS: use rediss:// (rediss+cluster://)", EnvCA, EnvCert, EnvServerName)
		}
		return nil, nil
	}
	cfg := base.Clone()
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	if s.ServerName != "" {
		cfg.ServerName = s.ServerName
	}
	if s.CA != "" {
		pem, err := os.ReadFile(s.CA)
		if err != nil {
			return nil, fmt.Errorf("ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca %s: no PEM certificate in it", s.CA)
		}
	}
	if (s.Cert == "") != (s.Key == "") {
		return nil, fmt.Errorf("cert and key go together: the client certificate and its private key")
	}
	if s.Cert != "" {
		pair, err := tls.LoadX509KeyPair(s.Cert, s.Key)
		if err != nil {
			return nil, fmt.Errorf("cert %s / key %s: %w", s.Cert, s.Key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// secure applies s to the parsed options: the TLS files, and the user and password where the
// address names none.
func (a *Addr) secure(s Security) error {
	apply := func(tlsCfg **tls.Config, user, pw *string) error {
		cfg, err := s.tlsConfig(*tlsCfg)
		if err != nil {
			return err
		}
		*tlsCfg = cfg
		if *user == "" && *pw == "" {
			*user, *pw = s.User, s.Password
		}
		return nil
	}
	if a.Cluster {
		return apply(&a.cluster.TLSConfig, &a.cluster.Username, &a.cluster.Password)
	}
	return apply(&a.single.TLSConfig, &a.single.Username, &a.single.Password)
}

// TLSConfig is the address's TLS settings (nil for plaintext), for posture checks.
func (a Addr) TLSConfig() *tls.Config {
	if a.Cluster {
		return a.cluster.TLSConfig
	}
	if a.single == nil {
		return nil
	}
	return a.single.TLSConfig
}

// TLS reports whether the address speaks TLS, for posture checks.
func (a Addr) TLS() bool {
	if a.Cluster {
		return a.cluster.TLSConfig != nil
	}
	return a.single != nil && a.single.TLSConfig != nil
}

// Authenticated reports whether the client logs in (a password, with or without an ACL user).
func (a Addr) Authenticated() bool {
	if a.Cluster {
		return a.cluster.Password != ""
	}
	return a.single != nil && a.single.Password != ""
}
