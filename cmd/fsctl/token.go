package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/checkout/auth"
)

type tokenOptions struct {
	secret, key, issuer, audience string
	ttl                           time.Duration
}

func newTokenCmd() *cobra.Command {
	var o tokenOptions
	cmd := &cobra.Command{
		Use:   "token USER",
		Short: "Mint a bearer token for a test buyer (HS256, or signed by an identity provider's key)",
		Long: `Mint a signed JWT whose sub is USER, for trying the API by hand or from scripts.

By default it is HS256 with the JWT secret, what fsctl serve checks without --jwks-url. With
--jwt-key (env ` + envJWTKey + `, which fsctl stack env sets on a secure stack) it is signed by that
private key as an identity provider would sign it: ES256, RS256 or EdDSA by the key's type, the
key's RFC 7638 thumbprint as kid, and iss and aud from --jwt-issuer and --jwt-audience, what
fsctl serve --jwks-url accepts when the provider's JWKS publishes the key. A --jwt-secret given
on the command line wins over the variable.`,
		Example: `  TOKEN=$(fsctl token alice)
  curl -X POST -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: $(uuidgen)" \
    localhost:8080/api/v1/sales/black-friday/items/console/purchase
  eval "$(fsctl stack env --dir .stack-secure)"; fsctl token alice   # ES256, from the stack's issuer key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if f.Changed("jwt-key") && f.Changed("jwt-secret") {
				return usageError(errors.New("--jwt-key and --jwt-secret: give one, the key (an identity provider's tokens) or the HS256 secret"))
			}
			if f.Changed("jwt-secret") && !f.Changed("jwt-key") {
				o.key = ""
			}
			tok, err := mintToken(o, args[0], time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	f := cmd.Flags()
	bindJWTSecret(f, &o.secret, "HS256 secret")
	f.StringVar(&o.key, "jwt-key", os.Getenv(envJWTKey), "private key file (PEM: ECDSA P-256, RSA or Ed25519) to sign with instead of the secret (env "+envJWTKey+")")
	markSecret(f, "jwt-key") // a path, yet where a signing key lives is nobody's business
	f.StringVar(&o.issuer, "jwt-issuer", os.Getenv(envJWTIssuer), "with --jwt-key: the token's iss (env "+envJWTIssuer+")")
	f.StringVar(&o.audience, "jwt-audience", os.Getenv(envJWTAudience), "with --jwt-key: the token's aud (env "+envJWTAudience+")")
	f.DurationVar(&o.ttl, "ttl", time.Hour, "how long the token is valid")
	return cmd
}

// mintToken signs user's token with the key when o names one, else HS256 with the secret.
func mintToken(o tokenOptions, user string, now time.Time) (string, error) {
	if o.key == "" {
		return auth.Mint([]byte(o.secret), user, now, o.ttl)
	}
	k, err := auth.LoadSigningKey(o.key)
	if err != nil {
		return "", usageError(err)
	}
	return k.Mint(user, o.issuer, o.audience, now, o.ttl)
}
