package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RecordFile is the file in a stack's folder that says how the stack was started: written by the
// first `up` (or the first service started), read back by every later call on that folder, so
// `status`, `env`, `down`, the game day and the faults all talk to the processes that folder runs,
// never to another stack's default ports.
const RecordFile = "stack.json"

// record is how a stack was started. The clusters keep their own layout.json beside their nodes.
type record struct {
	RedisPort           int    `json:"redisPort"`
	PostgresPort        int    `json:"postgresPort"`
	KafkaPort           int    `json:"kafkaPort"`
	KafkaControllerPort int    `json:"kafkaControllerPort"`
	KafkaLibs           string `json:"kafkaLibs,omitempty"`
	Secure              bool   `json:"secure,omitempty"`
	IssuerPort          int    `json:"issuerPort,omitempty"`
}

func recordPath(dir string) string { return filepath.Join(dir, RecordFile) }

// readRecord reads dir's record; ok is false when the stack was never started there.
func readRecord(dir string) (record, bool, error) {
	var r record
	b, err := os.ReadFile(recordPath(dir))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return r, false, nil
	case err != nil:
		return r, false, fmt.Errorf("stack record: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("stack record %s: %w (delete it once the stack is down to start afresh)", recordPath(dir), err)
	}
	return r, true, nil
}

// applyRecord fills the ports c leaves at zero from the stack's record, and refuses a port that
// differs from the one the stack runs on: the data in the folder belongs to the processes on the
// recorded ports, and a command on other ports would act on some other stack.
func (c *Config) applyRecord() error {
	r, ok, err := readRecord(c.Dir)
	if err != nil || !ok {
		return err
	}
	for _, p := range []struct {
		flag   string
		asked  *int
		stored int
	}{
		{"redis-port", &c.RedisPort, r.RedisPort},
		{"postgres-port", &c.PostgresPort, r.PostgresPort},
		{"kafka-port", &c.KafkaPort, r.KafkaPort},
		{"kafka-controller-port", &c.KafkaControllerPort, r.KafkaControllerPort},
		{"issuer-port", &c.IssuerPort, r.IssuerPort},
	} {
		switch {
		case p.stored == 0:
		case *p.asked == 0:
			*p.asked = p.stored
		case *p.asked != p.stored:
			return fmt.Errorf("the stack in %s runs with --%s %d, not %d: leave --%s out to use it as it is; to move it: fsctl stack down --dir %s && rm %s, then fsctl stack up --dir %s --%s %d",
				c.Dir, p.flag, p.stored, *p.asked, p.flag, c.Dir, recordPath(c.Dir), c.Dir, p.flag, *p.asked)
		}
	}
	if c.KafkaLibs == "" {
		c.KafkaLibs = r.KafkaLibs
	}
	switch {
	case c.Secure && !r.Secure:
		return fmt.Errorf("the stack in %s is plain (no TLS, no passwords): a secure stack needs a folder of its own, e.g. fsctl stack up --secure --dir %s", c.Dir, DefaultSecureDir)
	case r.Secure:
		c.Secure = true
	}
	return nil
}

// refusePlainData refuses to make a folder secure whose services were started plain before the
// stack kept records: their PostgreSQL trusts every login and their Kafka log has no SCRAM users.
func (c Config) refusePlainData() error {
	if !c.Secure {
		return nil
	}
	if _, ok, err := readRecord(c.Dir); err != nil || ok {
		return err
	}
	for _, f := range []string{filepath.Join(c.redisDir(), "data"), filepath.Join(c.kafkaDir(), "data", "meta.properties"), filepath.Join(c.Dir, "postgres", "data")} {
		if fileExists(f) {
			return fmt.Errorf("%s holds a plain stack's data (%s): a secure stack needs a folder of its own, e.g. fsctl stack up --secure --dir %s", c.Dir, f, DefaultSecureDir)
		}
	}
	return nil
}

// writeRecord keeps c's ports in its folder, unless the same record is there already.
func (c Config) writeRecord() error {
	r := record{RedisPort: c.RedisPort, PostgresPort: c.PostgresPort, KafkaPort: c.KafkaPort,
		KafkaControllerPort: c.KafkaControllerPort, KafkaLibs: c.KafkaLibs, Secure: c.Secure, IssuerPort: c.IssuerPort}
	if old, ok, err := readRecord(c.Dir); err == nil && ok && old == r {
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("stack dir: %w", err)
	}
	tmp := recordPath(c.Dir) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("stack record: %w", err)
	}
	return os.Rename(tmp, recordPath(c.Dir))
}

// Resolve is cfg as the stack in its folder runs: ports and paths left out come from the stack's
// record (then the defaults), and a port that differs from the record is an error that says how to
// move the stack. Every command that takes a stack folder resolves it before naming an address.
func Resolve(cfg Config) (Config, error) { return cfg.withDefaults() }
