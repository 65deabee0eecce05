package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandTeaches walks the command tree: every command has a one-line summary and its
// --help runs, so `fsctl <verb> --help` never comes up empty.
func TestEveryCommandTeaches(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" && c.Name() != "completion" && c.Name() != "help" {
			t.Errorf("%s has no Short description", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := newRootCmd()
	walk(root)
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"sale", "create", "--help"}, {"stack", "up", "--help"}, {"demo", "--help"}, {"blast", "--help"}} {
		var out bytes.Buffer
		root := newRootCmd()
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("fsctl %v: %v\n%s", args, err, out.String())
		}
	}
}

// TestEndpointFlagsReadTheEnvironment checks the documented precedence: flag > environment > stack default.
func TestEndpointFlagsReadTheEnvironment(t *testing.T) {
	t.Setenv("FSCTL_REDIS_URL", "redis://cache.example:6379/2")
	t.Setenv("FSCTL_KAFKA_BROKERS", "k1:9092, k2:9092")
	cmd := newServeCmd()
	if got := cmd.Flags().Lookup("redis-url").DefValue; got != "redis://cache.example:6379/2" {
		t.Errorf("redis-url default %q, want the environment's", got)
	}
	if got := cmd.Flags().Lookup("kafka-brokers").DefValue; got != "[k1:9092,k2:9092]" {
		t.Errorf("kafka-brokers default %q", got)
	}
	if got := cmd.Flags().Lookup("postgres-url").DefValue; !strings.Contains(got, "127.0.0.1:15432") {
		t.Errorf("postgres-url default %q, want the local stack's", got)
	}
}

func TestTokenCommandMintsAVerifiableToken(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"token", "alice", "--jwt-secret", "0123456789abcdef0123"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(strings.TrimSpace(out.String()), "."); len(parts) != 3 {
		t.Fatalf("token %q is not a JWT", out.String())
	}
	root = newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"token", "has space"})
	if err := root.Execute(); err == nil {
		t.Fatal("a user id with a space was accepted")
	}
}

func TestServeRejectsUnknownRole(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"serve", "--role", "api,payments"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "payments") {
		t.Fatalf("got %v, want an error naming the unknown role", err)
	}
}
