package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/stack"
)

// migrateOptions are the flags of migrate and its subcommands.
type migrateOptions struct {
	postgresURL string
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
			printMigrated(cmd.OutOrStdout(), res)
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&opts.postgresURL, "postgres-url", opts.postgresURL,
		"PostgreSQL URL (env "+stack.EnvPostgresURL+")")
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show the database's schema version against the latest one fsctl carries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := orders.MigrationStatus(cmd.Context(), opts.postgresURL)
			if err != nil {
				return err
			}
			printMigrationStatus(cmd.OutOrStdout(), st)
			if !st.UpToDate() {
				return &exitError{code: 1, err: fmt.Errorf("%d migration(s) pending: run `fsctl migrate`", st.Latest-st.Current)}
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
