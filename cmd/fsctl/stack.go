package main

import "github.com/spf13/cobra"

// newStackCmd is a placeholder; the stack owner replaces this file.
func newStackCmd() *cobra.Command { return &cobra.Command{Use: "stack"} }
