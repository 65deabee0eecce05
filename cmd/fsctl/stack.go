package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/stack"
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

func newStackEnvCmd(opts *stackOptions) *cobra.Command {
	var cluster, kafkaCluster bool
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the FSCTL_* settings that point fsctl and the tests at this stack, for eval",
		Long: `env prints one export line per setting, so a shell can take them all at once:

  eval "$(fsctl stack env)"                   # every command on the local stack
  eval "$(fsctl stack env --use-redis-cluster)"   # the same, with FSCTL_REDIS_URL on the local Redis Cluster
  eval "$(fsctl stack env --use-kafka-cluster)"   # the same, with FSCTL_KAFKA_BROKERS on the replicated Kafka`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := opts.config(cmd, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if cluster {
				if _, ok, err := stack.Layout(cfg); err != nil || !ok {
					return usageError(fmt.Errorf("this stack keeps no Redis Cluster: start one with fsctl stack up --redis-cluster 3 (%v)", err))
				}
			}
			if kafkaCluster {
				if _, ok, err := stack.KafkaClusterLayout(cfg); err != nil || !ok {
					return usageError(fmt.Errorf("this stack keeps no Kafka cluster: start one with fsctl stack up --kafka-cluster 3 (%v)", err))
				}
			}
			return printEndpoints(cmd.OutOrStdout(), cfg, "export ", cluster, kafkaCluster)
		},
	}
	cmd.Flags().BoolVar(&cluster, "use-redis-cluster", false, "point FSCTL_REDIS_URL at the local Redis Cluster")
	cmd.Flags().BoolVar(&kafkaCluster, "use-kafka-cluster", false, "point FSCTL_KAFKA_BROKERS at the local replicated Kafka")
	// The old names shadowed the stack's --redis-cluster N and --kafka-cluster N with a bool.
	deprecatedAlias(cmd.Flags(), "redis-cluster", "use-redis-cluster")
	deprecatedAlias(cmd.Flags(), "kafka-cluster", "use-kafka-cluster")
	return cmd
}

func newStackDepsCmd(opts *stackOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deps",
		Short: "Fetch the Kafka broker jars from Maven Central (needs mvn); a no-op when present",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := opts.config(cmd, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			return stack.FetchKafka(cmd.Context(), cfg, opts.pom)
		},
	}
	cmd.Flags().StringVar(&opts.pom, "pom", opts.pom, "Maven pom listing the Kafka broker and its dependencies")
	return cmd
}

// stackPortFlags are the flags whose value a stack records at `up`: left out, they are the
// recorded ones, so every command on a folder talks to the processes that folder runs.
var stackPortFlags = []string{"redis-port", "postgres-port", "kafka-port", "kafka-controller-port", "issuer-port"}

// config resolves the flags into the stack's config: a port flag the command line does not set
// is the stack's recorded port (the default for a new stack), one that differs from the record is
// a usage error naming the fix; --kafka-libs follows --dir unless set.
func (o *stackOptions) config(cmd *cobra.Command, out io.Writer) (stack.Config, error) {
	cfg := o.cfg
	cfg.Log = out
	if cfg.Secure && !cmd.Flags().Changed("dir") && os.Getenv(stack.EnvStackDir) == "" {
		cfg.Dir = stack.DefaultSecureDir
	}
	ports := map[string]*int{"redis-port": &cfg.RedisPort, "postgres-port": &cfg.PostgresPort,
		"kafka-port": &cfg.KafkaPort, "kafka-controller-port": &cfg.KafkaControllerPort, "issuer-port": &cfg.IssuerPort}
	for _, name := range stackPortFlags {
		if !cmd.Flags().Changed(name) {
			*ports[name] = 0
		}
	}
	cfg, err := stack.Resolve(cfg)
	if err != nil {
		return cfg, usageError(err)
	}
	if cfg.Renew && !cfg.Secure {
		return cfg, usageError(fmt.Errorf("--renew: the stack in %s is plain and has no certificates (fsctl stack up --secure makes a secure one)", cfg.Dir))
	}
	return cfg, nil
}

func newStackStatusCmd(opts *stackOptions) *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what runs where; exit status 3 when a service is down",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := opts.config(cmd, output.beside(cmd.OutOrStdout(), cmd.ErrOrStderr()))
			if err != nil {
				return err
			}
			return stackStatus(cmd, cfg, output)
		},
	}
	bindOutput(cmd.Flags(), &output, "the services")
	return cmd
}

// serviceJSON is one service of `stack status -o json`.
type serviceJSON struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	Running bool   `json:"running"`
	PID     int    `json:"pid,omitempty"`
	DataDir string `json:"dataDir"`
	LogFile string `json:"logFile"`
}

func stackStatus(cmd *cobra.Command, cfg stack.Config, output outputFlag) error {
	statuses, err := stack.Status(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	down := 0
	for _, s := range statuses {
		if !s.Running {
			down++
		}
	}
	var notRunning error
	if down > 0 {
		notRunning = checkFailed(fmt.Errorf("%d of %d services not running; start them with `fsctl stack up`", down, len(statuses)))
	}
	if output.json() {
		var services []serviceJSON
		for _, s := range statuses {
			services = append(services, serviceJSON{s.Name, s.Address, s.Running, s.PID, s.DataDir, s.LogFile})
		}
		if err := (reportOf{v: map[string]any{"services": services}}).WriteJSON(cmd.OutOrStdout()); err != nil {
			return err
		}
		return notRunning
	}
	table := tablewriter.NewWriter(cmd.OutOrStdout())
	table.Header("service", "address", "state", "pid", "data", "log")
	for _, s := range statuses {
		state, pid := "running", strconv.Itoa(s.PID)
		if !s.Running {
			state, pid = "stopped", "-"
		}
		if err := table.Append(s.Name, s.Address, state, pid, s.DataDir, s.LogFile); err != nil {
			return err
		}
	}
	if err := table.Render(); err != nil {
		return err
	}
	if err := clusterStatus(cmd, cfg); err != nil {
		return err
	}
	if notRunning != nil {
		return notRunning
	}
	return printEndpoints(cmd.OutOrStdout(), cfg, "", false, false)
}

// clusterStatus shows each node of the local Redis Cluster: its role and the slots it owns.
func clusterStatus(cmd *cobra.Command, cfg stack.Config) error {
	nodes, err := stack.ClusterNodes(cmd.Context(), cfg)
	if err != nil || len(nodes) == 0 {
		return err
	}
	table := tablewriter.NewWriter(cmd.OutOrStdout())
	table.Header("cluster node", "role", "slots", "pid")
	for _, n := range nodes {
		role, pid := n.Role, "-"
		if n.MasterOf != "" {
			role += " of " + n.MasterOf
		}
		if n.PID > 0 {
			pid = strconv.Itoa(n.PID)
		}
		if err := table.Append(n.Address, role, strings.Join(n.Slots, " "), pid); err != nil {
			return err
		}
	}
	return table.Render()
}

// printEndpoints shows the variables that point the CLI and the tests at this stack, each line
// after prefix ("export " for eval); onCluster points FSCTL_REDIS_URL at the local Redis Cluster,
// onKafkaCluster FSCTL_KAFKA_BROKERS at the local replicated Kafka.
func printEndpoints(w io.Writer, cfg stack.Config, prefix string, onCluster, onKafkaCluster bool) error {
	l, hasCluster, err := stack.Layout(cfg)
	if err != nil {
		return err
	}
	kl, hasKafkaCluster, err := stack.KafkaClusterLayout(cfg)
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
		prefix, stack.EnvStackDir, shellQuote(cfg.Dir),
		prefix, stack.EnvRedisURL, shellQuote(redisURL),
		prefix, stack.EnvPostgresURL, shellQuote(e.PostgresURL),
		prefix, stack.EnvKafkaBrokers, strings.Join(brokers, ","))
	if hasCluster {
		fmt.Fprintf(w, "%s%s=%s\n", prefix, stack.EnvRedisClusterURL, e.RedisClusterURL)
	}
	if hasKafkaCluster {
		fmt.Fprintf(w, "%s%s=%s\n", prefix, stack.EnvKafkaClusterBrokers, strings.Join(e.KafkaClusterBrokers, ","))
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
			{envJWKSURL, shellQuote(is.JWKSURL)}, {envJWTIssuer, shellQuote(is.URL)}, {envJWTAudience, shellQuote(is.Audience)},
			{envJWKSCA, shellQuote(is.CA)}, {envJWTKey, shellQuote(is.KeyFile)},
		} {
			fmt.Fprintf(w, "%s%s=%s\n", prefix, kv[0], kv[1])
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
