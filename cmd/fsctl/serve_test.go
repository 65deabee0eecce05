package main

import (
	"strings"
	"testing"
)

// TestServeRefusesDevSecretsBeyondLoopback: the development JWT secret is a usage error on an
// address other machines reach, named with what to set, before any service is dialled (the rules,
// case by case, are server's: TestSettingsRefuseDevSecretsBeyondLoopback).
func TestServeRefusesDevSecretsBeyondLoopback(t *testing.T) {
	t.Setenv(envJWTSecret, "")
	t.Setenv(envAdminToken, "")
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
