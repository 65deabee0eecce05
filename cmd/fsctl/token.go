package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/auth"
)

func newTokenCmd() *cobra.Command {
	var (
		secret string
		ttl    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "token USER",
		Short: "Mint an HS256 bearer token for a test buyer",
		Long:  "Mint a signed JWT whose sub is USER, for trying the API by hand or from scripts.",
		Example: `  TOKEN=$(fsctl token alice)
  curl -X POST -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: $(uuidgen)" \
    localhost:8080/api/v1/sales/black-friday/items/console/purchase`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := auth.Mint([]byte(secret), args[0], time.Now(), ttl)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	bindJWTSecret(cmd.Flags(), &secret, "HS256 secret")
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the token is valid")
	return cmd
}
