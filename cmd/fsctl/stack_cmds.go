package main

import (
	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

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
			if err := stack.CheckClusters(cfg, cluster, kafkaCluster); err != nil {
				return usageError(err)
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
	var notRunning error
	if err := stack.DownError(statuses); err != nil {
		notRunning = checkFailed(err)
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
	if err := stack.WriteStatusTable(cmd.OutOrStdout(), statuses); err != nil {
		return err
	}
	if err := stack.WriteClusterTable(cmd.Context(), cmd.OutOrStdout(), cfg); err != nil {
		return err
	}
	if notRunning != nil {
		return notRunning
	}
	return printEndpoints(cmd.OutOrStdout(), cfg, "", false, false)
}
