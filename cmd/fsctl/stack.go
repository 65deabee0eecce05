package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// stackOptions are the flags shared by the stack subcommands.
type stackOptions struct {
	cfg stack.Config
	pom string
}

func newStackCmd() *cobra.Command {
	opts := &stackOptions{cfg: stack.DefaultConfig(), pom: "deps/kafka/pom.xml"}
	cmd := &cobra.Command{
		Use:   "stack",
		Short: "Run the local Redis, PostgreSQL and Kafka the tests and demos use",
		Long: "stack runs Redis, PostgreSQL and a single-node KRaft Kafka as plain processes under one folder\n" +
			"(./.stack or $" + stack.EnvStackDir + "), on loopback ports that keep clear of system services.",
	}
	f := cmd.PersistentFlags()
	f.StringVar(&opts.cfg.Dir, "dir", opts.cfg.Dir, "folder for the services' data, logs and pidfiles (env "+stack.EnvStackDir+")")
	showStackDir(f)
	f.IntVar(&opts.cfg.RedisPort, "redis-port", opts.cfg.RedisPort, "Redis port on 127.0.0.1")
	f.IntVar(&opts.cfg.PostgresPort, "postgres-port", opts.cfg.PostgresPort, "PostgreSQL port on 127.0.0.1")
	f.IntVar(&opts.cfg.KafkaPort, "kafka-port", opts.cfg.KafkaPort, "Kafka broker port on 127.0.0.1")
	f.IntVar(&opts.cfg.KafkaControllerPort, "kafka-controller-port", opts.cfg.KafkaControllerPort, "Kafka KRaft controller port on 127.0.0.1")
	f.StringVar(&opts.cfg.KafkaLibs, "kafka-libs", "", "folder of the Kafka broker jars (default <dir>/kafka/libs)")
	f.IntVar(&opts.cfg.RedisCluster.Masters, "redis-cluster", 0, "also run a local Redis Cluster of this many masters (at least 3; remembered until the stack's redis-cluster folder is deleted)")
	f.IntVar(&opts.cfg.RedisCluster.Replicas, "redis-cluster-replicas", 0, "replicas per master of the local Redis Cluster")
	f.IntVar(&opts.cfg.RedisCluster.Port, "redis-cluster-port", 0, fmt.Sprintf("port of the cluster's first node on 127.0.0.1, node i on port+i, its bus on port+i+10000 (default %d; a secure stack's %d)", stack.DefaultRedisClusterPort, stack.DefaultSecureRedisClusterPort))
	f.IntVar(&opts.cfg.KafkaCluster.Brokers, "kafka-cluster", 0, "also run a local replicated Kafka of this many KRaft brokers (3 to 9; topics get replication factor 3 and min.insync.replicas 2; remembered until the stack's kafka-cluster folder is deleted)")
	f.IntVar(&opts.cfg.KafkaCluster.Port, "kafka-cluster-port", 0, fmt.Sprintf("port of the Kafka cluster's first broker on 127.0.0.1, broker i on port+i, its controller on port+100+i (default %d; a secure stack's %d)", stack.DefaultKafkaClusterPort, stack.DefaultSecureKafkaClusterPort))
	f.BoolVar(&opts.cfg.Secure, "secure", false, "the stack in production posture: TLS only from a CA of its own, a password for every client (Redis ACL user, PostgreSQL SCRAM over verify-full TLS, Kafka SASL_SSL SCRAM-SHA-512); in ./"+stack.DefaultSecureDir+" on ports 16380, 15433, 19094/19095 (and its identity provider's JWKS on 18443) unless the folder and ports are given; remembered by the folder")
	f.IntVar(&opts.cfg.IssuerPort, "issuer-port", stack.DefaultSecureIssuerPort, "a secure stack's identity provider (its JWKS over HTTPS) on 127.0.0.1")
	// The issuer is this binary, run detached (fsctl stack issuer).
	opts.cfg.Executable, _ = os.Executable()
	f.BoolVar(&opts.cfg.Renew, "renew", false, "with up on a secure stack: issue a new server certificate and restart the services on it (done by itself 14 days before it expires)")
	deprecatedAlias(f, "kafka-brokers", "kafka-cluster") // --kafka-brokers is a broker list everywhere else
	cmd.AddCommand(
		&cobra.Command{
			Use:   "up",
			Short: "Start the services that are not running and wait until all are ready",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				cfg, err := opts.config(cmd, cmd.OutOrStdout())
				if err != nil {
					return err
				}
				begin := time.Now()
				if err := stack.Up(cmd.Context(), cfg); err != nil {
					return err
				}
				fmt.Fprintf(cfg.Log, "stack ready in %s\n", time.Since(begin).Round(100*time.Millisecond))
				return printEndpoints(cfg.Log, cfg, "", false, false)
			},
		},
		&cobra.Command{
			Use:   "down",
			Short: "Stop every service of the stack (data is kept)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				cfg, err := opts.config(cmd, cmd.OutOrStdout())
				if err != nil {
					return err
				}
				return stack.Down(cmd.Context(), cfg)
			},
		},
		newStackStatusCmd(opts),
		newStackDepsCmd(opts),
		newStackEnvCmd(opts),
		newStackIssuerCmd(opts),
	)
	return cmd
}

// config resolves the flags into the stack's config (stack.ResolveFlags): a port flag the command
// line does not set is the stack's recorded port (the default for a new stack), one that differs
// from the record is a usage error naming the fix; --kafka-libs follows --dir unless set.
func (o *stackOptions) config(cmd *cobra.Command, out io.Writer) (stack.Config, error) {
	cfg := o.cfg
	cfg.Log = out
	cfg, err := stack.ResolveFlags(cfg, cmd.Flags().Changed)
	if err != nil {
		return cfg, usageError(err)
	}
	return cfg, nil
}

// printEndpoints shows the variables that point the CLI and the tests at this stack (stack.WriteEnv).
func printEndpoints(w io.Writer, cfg stack.Config, prefix string, onCluster, onKafkaCluster bool) error {
	return stack.WriteEnv(w, cfg, prefix, onCluster, onKafkaCluster)
}
