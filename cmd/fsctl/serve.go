package main

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/server"
)

type serveOptions struct {
	endpoints     endpointFlags
	addr          string
	roles         []string
	jwtSecret     string
	maxConns      int
	publishLinger time.Duration
	partitions    int
	migrate       bool
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference checkout server (API and order consumer)",
		Long: `Run the reference flash-sale checkout server against Redis, Kafka and PostgreSQL.

The api role answers purchases: one atomic Redis Lua reserve, then OrderPlaced to Kafka with
acks=all before the buyer hears 202. The consumer role records orders in PostgreSQL in batches
and dead-letters what the database refuses. Run both in one process (the default) or split them.
Migrations are applied at start.`,
		Example: `  fsctl serve                          # both roles on :8080 against the local stack
  fsctl serve --role api --addr :9090  # a second API instance
  FSCTL_JWT_SECRET=... fsctl serve --redis-url redis://cache:6379/0 --kafka-brokers k1:9092,k2:9092`,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd, o) },
	}
	fs := cmd.Flags()
	o.endpoints.bind(fs, true)
	d := server.DefaultConfig()
	fs.StringVar(&o.addr, "addr", d.Addr, "listen address of the API")
	fs.StringSliceVar(&o.roles, "role", []string{"api", "consumer"}, "roles to run: api, consumer")
	fs.StringVar(&o.jwtSecret, "jwt-secret", defaultJWTSecret(), "HS256 secret of buyers' tokens (env "+envJWTSecret+")")
	fs.IntVar(&o.maxConns, "max-conns", d.MaxConns, "most open client connections; keep below the open-file limit")
	fs.DurationVar(&o.publishLinger, "publish-linger", time.Millisecond, "how long a Kafka publish waits to share a produce request")
	fs.IntVar(&o.partitions, "partitions", 6, "partitions of the orders topic when the server creates it")
	fs.BoolVar(&o.migrate, "migrate", true, "apply database migrations at start")
	return cmd
}

func serve(cmd *cobra.Command, o serveOptions) error {
	for _, r := range o.roles {
		if r != "api" && r != "consumer" {
			return fmt.Errorf("--role %q: must be api or consumer", r)
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if o.jwtSecret == devJWTSecret {
		log.Warn("using the built-in development JWT secret; set " + envJWTSecret + " for anything real")
	}
	cfg := server.DefaultConfig()
	cfg.Addr, cfg.MaxConns, cfg.Version = o.addr, o.maxConns, version
	app, err := server.Open(cmd.Context(), server.AppConfig{
		Server: cfg, RedisURL: o.endpoints.redisURL, PostgresURL: o.endpoints.postgresURL,
		Brokers: o.endpoints.brokers, JWTSecret: []byte(o.jwtSecret), Partitions: o.partitions,
		API: slices.Contains(o.roles, "api"), Consumer: slices.Contains(o.roles, "consumer"),
		PublishLinger: o.publishLinger, Migrate: o.migrate,
	}, log)
	if err != nil {
		return err
	}
	defer app.Close()
	return app.Run(cmd.Context(), nil)
}
