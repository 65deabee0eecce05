package stack

import (
	"fmt"
	"os"
)

// PortFlags are the flags of `fsctl stack` whose value a stack records at up: left out, they are
// the recorded ones, so every command on a folder talks to the processes that folder runs.
var PortFlags = []string{"redis-port", "postgres-port", "kafka-port", "kafka-controller-port", "issuer-port"}

// ResolveFlags resolves cfg as `fsctl stack`'s flags give it; given says whether the command line
// set a flag ("dir", PortFlags). A secure stack without --dir (nor EnvStackDir) lives in
// DefaultSecureDir; a port flag not given is the stack's recorded port (the default for a new
// stack); one that differs from the record, and --renew on a plain stack, are the command line's
// mistakes, named with the fix.
func ResolveFlags(cfg Config, given func(flag string) bool) (Config, error) {
	if cfg.Secure && !given("dir") && os.Getenv(EnvStackDir) == "" {
		cfg.Dir = DefaultSecureDir
	}
	ports := map[string]*int{"redis-port": &cfg.RedisPort, "postgres-port": &cfg.PostgresPort,
		"kafka-port": &cfg.KafkaPort, "kafka-controller-port": &cfg.KafkaControllerPort, "issuer-port": &cfg.IssuerPort}
	for _, name := range PortFlags {
		if !given(name) {
			*ports[name] = 0
		}
	}
	cfg, err := Resolve(cfg)
	if err != nil {
		return cfg, err
	}
	if cfg.Renew && !cfg.Secure {
		return cfg, fmt.Errorf("--renew: the stack in %s is plain and has no certificates (fsctl stack up --secure makes a secure one)", cfg.Dir)
	}
	return cfg, nil
}
