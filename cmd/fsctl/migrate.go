package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/harness/stack"
)

// migrateOptions are the flags of migrate and its subcommands.
type migrateOptions struct {
	postgresURL string
	output      outputFlag
}

func newMigrateCmd() *cobra.Command {
	opts := &migrateOptions{postgresURL: stack.EndpointsFromEnv().PostgresURL}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the PostgreSQL schema migrations built into fsctl",
		Long: "migrate brings the order store's schema up to the newest version this binary carries.\n" +
			"It is safe to run again (a no-op when up to date) and concurrent runs wait for each other.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := orders.Migrate(cmd.Context(), opts.postgresURL)
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), opts.output, reportOf{migrationJSON(res.MigrationState, res.Applied), func(w io.Writer) error {
				printMigrated(w, res)
				return nil
			}})
		},
	}
	addressString(cmd.PersistentFlags(), &opts.postgresURL, "postgres-url", opts.postgresURL,
		"PostgreSQL URL (env "+stack.EnvPostgresURL+")")
	bindOutput(cmd.PersistentFlags(), &opts.output, "the schema version")
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show the database's schema version against the latest one fsctl carries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := orders.MigrationStatus(cmd.Context(), opts.postgresURL)
			if err != nil {
				return err
			}
			err = writeReport(cmd.OutOrStdout(), opts.output, reportOf{migrationJSON(st, nil), func(w io.Writer) error {
				printMigrationStatus(w, st)
				return nil
			}})
			if err != nil {
				return err
			}
			if !st.UpToDate() {
				return checkFailed(fmt.Errorf("%d migration(s) pending: run `fsctl migrate`", st.Latest-st.Current))
			}
			return nil
		},
	})
	return cmd
}

func printMigrated(w io.Writer, res orders.MigrateResult) {
	fmt.Fprintf(w, "migrations: at version %d (latest %d), applied %d now", res.Current, res.Latest, len(res.Applied))
	if len(res.Applied) > 0 {
		fmt.Fprintf(w, " %v", res.Applied)
	}
	fmt.Fprintln(w)
}

func printMigrationStatus(w io.Writer, st orders.MigrationState) {
	state := "up to date"
	if !st.UpToDate() {
		state = "behind"
	}
	fmt.Fprintf(w, "migrations: at version %d (latest %d), %s\n", st.Current, st.Latest, state)
}

// migrationJSON is migrate's -o json: the versions, and what this run applied.
func migrationJSON(st orders.MigrationState, applied []int64) map[string]any {
	return map[string]any{"current": st.Current, "latest": st.Latest, "upToDate": st.UpToDate(), "applied": applied}
}
