package main

import "github.com/spf13/cobra"

// newMigrateCmd is a placeholder; the orders owner replaces this file.
func newMigrateCmd() *cobra.Command { return &cobra.Command{Use: "migrate"} }
