package server

import (
	"context"

	"github.com/fsctl/fsctl/internal/checkout/auth"
)

// openVerifier builds the check of buyers' tokens: HS256 with the JWT secret, or, with cfg.JWKS
// on an instance of the api role, the identity provider's key set, fetched until Close. An
// issuer that does not answer at start does not stop it: the instance serves, refuses every
// token with 401 and reports "jwks" not ready on /readyz until the issuer answers (a load
// balancer sends it no buyers meanwhile), rather than exiting into a restart loop while the
// issuer is down.
func (a *App) openVerifier(ctx context.Context, cfg AppConfig) (*auth.Verifier, error) {
	if cfg.JWKS == nil || !cfg.API {
		return auth.NewVerifier(cfg.JWTSecret, nil)
	}
	jc := *cfg.JWKS
	if jc.Log == nil {
		jc.Log = a.log
	}
	// The refreshes outlive Open's context (a start-up deadline): they end with the app.
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	v, err := auth.NewJWKSVerifier(jctx, cfg.JWTSecret, jc, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	a.stopJWKS = cancel
	if err := v.Ready(ctx); err != nil {
		a.log.Warn("starting without the identity provider's keys: every buyer's token is refused (401) and /readyz reports jwks not ready until it answers", "err", err)
	} else {
		a.log.Info("buyers' tokens are verified against the identity provider's JWKS", "url", jc.URL, "issuer", jc.Issuer, "audience", jc.Audience)
	}
	return v, nil
}
