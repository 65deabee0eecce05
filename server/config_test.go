package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/server"
)

// goodSettings are the settings of fsctl serve's defaults on loopback: Validate takes them.
func goodSettings() server.Settings {
	return server.Settings{Roles: []string{"api", "consumer"}, Addr: "127.0.0.1:8080", ReadModel: server.ReadModelEvents,
		SoldOut: "verify", Lifecycle: lifecycle.DefaultConfig(), IdemTTL: 24 * time.Hour, JWTSecret: "a-real-secret-0123456789"}
}

// TestSettingsValidate: each bad value is refused with the message fsctl serve has always given
// it, a usage error or not as before (exit 2 or 1).
func TestSettingsValidate(t *testing.T) {
	if err := goodSettings().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for name, tc := range map[string]struct {
		change func(*server.Settings)
		want   string
		usage  bool
	}{
		"role":            {func(s *server.Settings) { s.Roles = []string{"api", "payments"} }, `--role "payments": must be api, consumer or reservation`, false},
		"read model":      {func(s *server.Settings) { s.ReadModel = "cache" }, `--read-model "cache": must be events or poll`, true},
		"no read model":   {func(s *server.Settings) { s.ReadModel = "" }, `--read-model "": must be events or poll`, true},
		"sold-out flag":   {func(s *server.Settings) { s.SoldOut = "maybe" }, `--sold-out-flag: sold-out flag mode "maybe": must be off, verify or trust`, false},
		"payment timeout": {func(s *server.Settings) { s.Lifecycle.PaymentTimeout = 0 }, "--payment-timeout, --expiry-interval and --sweep-interval must be positive", false},
		"expiry interval": {func(s *server.Settings) { s.Lifecycle.ExpiryInterval = -time.Second }, "--payment-timeout, --expiry-interval and --sweep-interval must be positive", false},
		"sweep interval":  {func(s *server.Settings) { s.Lifecycle.SweepInterval = 0 }, "--payment-timeout, --expiry-interval and --sweep-interval must be positive", false},
		"idempotency ttl": {func(s *server.Settings) { s.IdemTTL = 30 * time.Second }, "--idempotency-ttl 30s: use at least 1m, and longer than a buyer keeps retrying (a retry after it is a fresh attempt)", false},
		"cert alone":      {func(s *server.Settings) { s.TLSCertFile = "c.pem" }, "--tls-cert and --tls-key go together: the certificate and its private key", true},
		"key alone":       {func(s *server.Settings) { s.TLSKeyFile = "k.pem" }, "--tls-cert and --tls-key go together: the certificate and its private key", true},
		"dev secret": {func(s *server.Settings) { s.Addr, s.JWTSecret = ":8080", server.DevJWTSecret }, "refusing to serve on :8080, beyond this machine, with the development JWT secret (set FSCTL_JWT_SECRET or --jwt-secret); " +
			"or listen on loopback (--addr 127.0.0.1:8080), or pass --insecure-dev-secrets for a test", true},
		"short admin token": {func(s *server.Settings) { s.AdminToken = "short" }, "--admin-token is 5 characters; use at least 16 (e.g. openssl rand -hex 16)", false},
		"claim age": {func(s *server.Settings) { s.Lifecycle.ClaimAge = time.Second }, "--sale-claim-age 1s is shorter than a purchase may take between its claim and its reserve; use 5s or more (default " +
			lifecycle.DefaultConfig().ClaimAge.String() + ")", false},
	} {
		t.Run(name, func(t *testing.T) {
			s := goodSettings()
			tc.change(&s)
			err := s.Validate()
			se, ok := errors.AsType[*server.SettingError](err)
			if !ok || err.Error() != tc.want || se.Usage != tc.usage {
				t.Fatalf("%v (usage %v), want %q (usage %v)", err, ok && se.Usage, tc.want, tc.usage)
			}
		})
	}
}

// TestSettingsRefuseDevSecretsBeyondLoopback: the development JWT secret or admin token is
// refused on an address other machines reach, named with what to set; loopback and
// InsecureDevSecrets let it through.
func TestSettingsRefuseDevSecretsBeyondLoopback(t *testing.T) {
	const real = "a-real-secret-0123456789"
	api := []string{"api", "consumer"}
	for name, tc := range map[string]struct {
		roles              []string
		addr, secret, adm  string
		insecureDevSecrets bool
		want               string // in the refusal; "" = not refused
	}{
		"every interface":      {api, ":8080", server.DevJWTSecret, "", false, "FSCTL_JWT_SECRET"},
		"a public address":     {api, "10.1.2.3:8080", server.DevJWTSecret, "", false, "FSCTL_JWT_SECRET"},
		"dev admin token":      {api, "0.0.0.0:8080", real, server.DevAdminToken, false, "FSCTL_ADMIN_TOKEN"},
		"both":                 {api, "[::]:8080", server.DevJWTSecret, server.DevAdminToken, false, "JWT secret (set FSCTL_JWT_SECRET or --jwt-secret) and the development admin token"},
		"loopback":             {api, "127.0.0.1:8080", server.DevJWTSecret, "", false, ""},
		"loopback v6":          {api, "[::1]:8080", server.DevJWTSecret, server.DevAdminToken, false, ""},
		"localhost":            {api, "localhost:8080", server.DevJWTSecret, "", false, ""},
		"a test":               {api, ":8080", server.DevJWTSecret, "", true, ""},
		"real secrets, public": {api, ":8080", real, real, false, ""},
		"consumer only":        {[]string{"consumer"}, ":8080", server.DevJWTSecret, "", false, ""},
	} {
		t.Run(name, func(t *testing.T) {
			s := goodSettings()
			s.Roles, s.Addr, s.JWTSecret, s.AdminToken, s.InsecureDevSecrets = tc.roles, tc.addr, tc.secret, tc.adm, tc.insecureDevSecrets
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--insecure-dev-secrets")):
				t.Fatalf("%v, want a refusal naming %s and --insecure-dev-secrets", err, tc.want)
			}
		})
	}
}

// TestConfigValidate: the connection caps and the purchase deadline.
func TestConfigValidate(t *testing.T) {
	if err := server.DefaultConfig().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for name, tc := range map[string]struct {
		change func(*server.Config)
		want   string
		usage  bool
	}{
		"max conns":   {func(c *server.Config) { c.MaxConns = -1 }, "--max-conns and --shed-conns must not be negative", false},
		"shed conns":  {func(c *server.Config) { c.ShedConns = -1 }, "--max-conns and --shed-conns must not be negative", false},
		"short":       {func(c *server.Config) { c.PurchaseDeadline = 500 * time.Millisecond }, "--purchase-deadline 500ms: give at least 1s (a purchase's Redis and Kafka round trips need that much under load), or 0 for none", true},
		"negative":    {func(c *server.Config) { c.PurchaseDeadline = -time.Second }, "--purchase-deadline -1s: give at least 1s (a purchase's Redis and Kafka round trips need that much under load), or 0 for none", true},
		"no deadline": {func(c *server.Config) { c.PurchaseDeadline = 0 }, "", false},
	} {
		t.Run(name, func(t *testing.T) {
			c := server.DefaultConfig()
			tc.change(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			se, ok := errors.AsType[*server.SettingError](err)
			if !ok || err.Error() != tc.want || se.Usage != tc.usage {
				t.Fatalf("%v (usage %v), want %q (usage %v)", err, ok && se.Usage, tc.want, tc.usage)
			}
		})
	}
}

func TestCrashAfterReserveFromEnv(t *testing.T) {
	for v, want := range map[string]struct {
		n        int
		set, bad bool
	}{"": {0, false, false}, "3": {3, true, false}, "0": {0, true, false}, "-1": {0, true, true}, "x": {0, true, true}} {
		t.Setenv(server.EnvCrashAfterReserve, v)
		n, set, err := server.CrashAfterReserveFromEnv()
		if n != want.n || set != want.set || (err != nil) != want.bad {
			t.Errorf("%q: %d %v %v, want %+v", v, n, set, err, want)
		}
		if want.bad && (err == nil || !strings.Contains(err.Error(), "want a count of reservations")) {
			t.Errorf("%q: %v", v, err)
		}
	}
}
