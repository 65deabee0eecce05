package main

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/stack"
)

// endpointFlags are the service addresses every command that talks to the stack takes. Defaults
// come from the environment (FSCTL_REDIS_URL, FSCTL_POSTGRES_URL, FSCTL_KAFKA_BROKERS), then from
// the local stack's ports.
type endpointFlags struct {
	redisURL    string
	postgresURL string
	brokers     []string
}

func (e *endpointFlags) bind(fs *pflag.FlagSet, kafka bool) {
	env := stack.EndpointsFromEnv()
	addressString(fs, &e.redisURL, "redis-url", env.RedisURL, "Redis: redis://host:port/db, or redis+cluster://host:port,host:port for a Redis Cluster (env "+stack.EnvRedisURL+")")
	addressString(fs, &e.postgresURL, "postgres-url", env.PostgresURL, "PostgreSQL URL (env "+stack.EnvPostgresURL+")")
	if kafka {
		fs.StringSliceVar(&e.brokers, "kafka-brokers", env.KafkaBrokers, "Kafka bootstrap brokers, comma separated (env "+stack.EnvKafkaBrokers+")")
	}
}

// envJWTSecret names the variable holding the HS256 secret buyers' tokens are signed with.
const envJWTSecret = "FSCTL_JWT_SECRET"

// Variables of the server's operator token and payment provider.
const (
	envAdminToken   = "FSCTL_ADMIN_TOKEN"
	envPaymentURL   = "FSCTL_PAYMENT_URL"
	envRoomRedisURL = "FSCTL_ROOM_REDIS_URL"
	envRoomSecret   = "FSCTL_ROOM_SECRET"
)

// devJWTSecret is the secret of the local stack and the demo; serve warns when it is used.
const devJWTSecret = "fsctl-local-dev-secret-do-not-use-in-production"

// bindJWTSecret adds --jwt-secret of the commands that sign or verify buyers' tokens with one secret.
func bindJWTSecret(f *pflag.FlagSet, p *string, usage string) {
	f.StringVar(p, "jwt-secret", defaultJWTSecret(), usage+" (env "+envJWTSecret+")")
	markSecret(f, "jwt-secret")
}

func defaultJWTSecret() string {
	if v := os.Getenv(envJWTSecret); v != "" {
		return v
	}
	return devJWTSecret
}
