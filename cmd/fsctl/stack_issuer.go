package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// newStackIssuerCmd is the secure stack's identity provider process, started detached by stack
// up (hidden: nobody runs it by hand).
func newStackIssuerCmd(opts *stackOptions) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:    "issuer",
		Short:  "Serve a secure stack's JWKS and discovery document (run by stack up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(os.Stderr, "text", "info")
			if err != nil {
				return err
			}
			return stack.ServeIssuer(cmd.Context(), opts.cfg.Dir, addr, log)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:18443", "listen address")
	return cmd
}
