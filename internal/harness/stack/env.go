package stack

import (
	"fmt"
	"io"
	"strings"
)

// The variables of an identity provider's tokens that `fsctl stack env` sets on a secure stack:
// fsctl serve verifies against EnvJWKSURL (trusting EnvJWKSCA), fsctl token and the bundled
// profile sign with the key file EnvJWTKey names, and both put or check EnvJWTIssuer and
// EnvJWTAudience.
const (
	EnvJWKSURL     = "FSCTL_JWKS_URL"
	EnvJWKSCA      = "FSCTL_JWKS_CA"
	EnvJWTIssuer   = "FSCTL_JWT_ISSUER"
	EnvJWTAudience = "FSCTL_JWT_AUDIENCE"
	EnvJWTKey      = "FSCTL_JWT_KEY"
)

// WriteEnv writes the variables that point the CLI and the tests at this stack, one a line, each
// after prefix ("export " for eval); onCluster points FSCTL_REDIS_URL at the local Redis Cluster,
// onKafkaCluster FSCTL_KAFKA_BROKERS at the local replicated Kafka. Passwords and keys are named
// by their files, never written.
func WriteEnv(w io.Writer, cfg Config, prefix string, onCluster, onKafkaCluster bool) error {
	l, hasCluster, err := Layout(cfg)
	if err != nil {
		return err
	}
	kl, hasKafkaCluster, err := KafkaClusterLayout(cfg)
	if err != nil {
		return err
	}
	cfg.RedisCluster, cfg.KafkaCluster = l, kl
	e := cfg.Endpoints()
	redisURL, brokers := e.RedisURL, e.KafkaBrokers
	if onCluster {
		redisURL = e.RedisClusterURL
	}
	if onKafkaCluster {
		brokers = e.KafkaClusterBrokers
	}
	fmt.Fprintf(w, "%s%s=%s\n%s%s=%s\n%s%s=%s\n%s%s=%s\n",
		prefix, EnvStackDir, shellQuote(cfg.Dir),
		prefix, EnvRedisURL, shellQuote(redisURL),
		prefix, EnvPostgresURL, shellQuote(e.PostgresURL),
		prefix, EnvKafkaBrokers, strings.Join(brokers, ","))
	if hasCluster {
		fmt.Fprintf(w, "%s%s=%s\n", prefix, EnvRedisClusterURL, e.RedisClusterURL)
	}
	if hasKafkaCluster {
		fmt.Fprintf(w, "%s%s=%s\n", prefix, EnvKafkaClusterBrokers, strings.Join(e.KafkaClusterBrokers, ","))
	}
	if c := e.Credentials; c != nil {
		// Passwords are read from their files when the shell evaluates the line: the output
		// itself, on a screen or in a CI log, holds none.
		cat := func(file string) (string, error) { return `"$(cat ` + shellQuote(file) + `)"`, nil }
		vars, _ := c.Variables(cat) // cat never fails
		for _, kv := range vars {
			v := kv[1]
			if !strings.HasPrefix(v, `"$(cat `) {
				v = shellQuote(v)
			}
			fmt.Fprintf(w, "%s%s=%s\n", prefix, kv[0], v)
		}
	}
	if is := e.Issuer; is != nil {
		// The key's file, not the key: the output holds nothing that signs.
		for _, kv := range [][2]string{
			{EnvJWKSURL, shellQuote(is.JWKSURL)}, {EnvJWTIssuer, shellQuote(is.URL)}, {EnvJWTAudience, shellQuote(is.Audience)},
			{EnvJWKSCA, shellQuote(is.CA)}, {EnvJWTKey, shellQuote(is.KeyFile)},
		} {
			fmt.Fprintf(w, "%s%s=%s\n", prefix, kv[0], kv[1])
		}
	}
	return nil
}

// CheckClusters refuses to point the variables at a local Redis Cluster (redis) or replicated
// Kafka (kafka) the stack does not keep, saying how to start one.
func CheckClusters(cfg Config, redis, kafka bool) error {
	if redis {
		if _, ok, err := Layout(cfg); err != nil || !ok {
			return fmt.Errorf("this stack keeps no Redis Cluster: start one with fsctl stack up --redis-cluster 3 (%v)", err)
		}
	}
	if kafka {
		if _, ok, err := KafkaClusterLayout(cfg); err != nil || !ok {
			return fmt.Errorf("this stack keeps no Kafka cluster: start one with fsctl stack up --kafka-cluster 3 (%v)", err)
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell's eval when it holds anything but the characters of a
// plain path.
func shellQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:@%+=,-", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
