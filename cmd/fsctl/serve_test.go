package main

import (
	"strings"
	"testing"
)

// TestServeRefusesDevSecretsBeyondLoopback: the development JWT secret or admin token is a usage
// error on an address other machines reach, named with what to set; loopback and
// --insecure-dev-secrets let it through (to the next step, which fails on the closed ports here).
func TestServeRefusesDevSecretsBeyondLoopback(t *testing.T) {
	t.Setenv(envJWTSecret, "")
	t.Setenv(envAdminToken, "")
	const real = "a-real-secret-0123456789"
	api := []string{"api", "consumer"}
	for name, tc := range map[string]struct {
		o    serveOptions
		want string // in the refusal; "" = not refused
	}{
		"every interface":      {serveOptions{roles: api, addr: ":8080", jwtSecret: devJWTSecret}, envJWTSecret},
		"a public address":     {serveOptions{roles: api, addr: "10.1.2.3:8080", jwtSecret: devJWTSecret}, envJWTSecret},
		"dev admin token":      {serveOptions{roles: api, addr: "0.0.0.0:8080", jwtSecret: real, adminToken: devAdminToken}, envAdminToken},
		"both":                 {serveOptions{roles: api, addr: "[::]:8080", jwtSecret: devJWTSecret, adminToken: devAdminToken}, "JWT secret (set FSCTL_JWT_SECRET or --jwt-secret) and the development admin token"},
		"loopback":             {serveOptions{roles: api, addr: "127.0.0.1:8080", jwtSecret: devJWTSecret}, ""},
		"loopback v6":          {serveOptions{roles: api, addr: "[::1]:8080", jwtSecret: devJWTSecret, adminToken: devAdminToken}, ""},
		"localhost":            {serveOptions{roles: api, addr: "localhost:8080", jwtSecret: devJWTSecret}, ""},
		"a test":               {serveOptions{roles: api, addr: ":8080", jwtSecret: devJWTSecret, devSecrets: true}, ""},
		"real secrets, public": {serveOptions{roles: api, addr: ":8080", jwtSecret: real, adminToken: real}, ""},
		"consumer only":        {serveOptions{roles: []string{"consumer"}, addr: ":8080", jwtSecret: devJWTSecret}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := checkDevSecrets(tc.o)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--insecure-dev-secrets")):
				t.Fatalf("%v, want a refusal naming %s and --insecure-dev-secrets", err, tc.want)
			}
		})
	}
	// Through the command: exit 2 before any service is dialled.
	_, code, err := runCLI(t, "serve", "--addr", ":0")
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), envJWTSecret) {
		t.Errorf("serve --addr :0 with the development secret: exit %d, %v; want %d naming %s", code, err, exitUsage, envJWTSecret)
	}
}

func TestServeTLSFlagsGoTogether(t *testing.T) {
	for _, args := range [][]string{{"--tls-cert", "c.pem"}, {"--tls-key", "k.pem"}} {
		_, code, err := runCLI(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), "--tls-cert and --tls-key go together") {
			t.Errorf("serve %v: exit %d, %v; want a usage error", args, code, err)
		}
	}
}
