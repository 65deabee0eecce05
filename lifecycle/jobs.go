package lifecycle

import (
	"context"
	"errors"
	"time"

	"github.com/fsctl/fsctl/payment"
)

// Job names, as the Enabled switch and the logs know them.
const (
	JobExpiry  = "expiry"
	JobSweeper = "sweeper"
)

// Run runs the expiry job, the sweeper and the claim resolver until ctx ends. Every server
// instance may run them at once: PostgreSQL's conditional updates decide each order exactly once,
// and Redis releases are idempotent.
func (s *Service) Run(ctx context.Context) error {
	expiry := time.NewTicker(s.cfg.ExpiryInterval)
	defer expiry.Stop()
	sweep := time.NewTicker(s.cfg.SweepInterval)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-expiry.C:
			if s.enabled(JobExpiry) {
				if _, err := s.ExpireOnce(ctx); err != nil && ctx.Err() == nil {
					s.Log.Warn("expiry round failed; retrying next tick", "err", err)
				}
			}
		case <-sweep.C:
			if s.enabled(JobSweeper) {
				if _, err := s.SweepOnce(ctx); err != nil && ctx.Err() == nil {
					s.Log.Warn("sweep round failed; retrying next tick", "err", err)
				}
				if _, err := s.ResolveClaimsOnce(ctx); err != nil && ctx.Err() == nil {
					s.Log.Warn("claim resolution failed; retrying next tick", "err", err)
				}
			}
		}
	}
}

// ExpireOnce expires every due hold (in batches of ExpiryBatch) and returns how many it expired.
// Each order is marked EXPIRED by one UPDATE ... RETURNING, and only the caller whose UPDATE
// returned it releases its unit, after the commit.
func (s *Service) ExpireOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		// On a failure part-way, the orders already committed as EXPIRED still come back and
		// are released before the error is reported.
		expired, err := s.Orders.ExpireDue(ctx, s.cfg.ExpiryBatch)
		for _, o := range expired {
			s.release(ctx, o, "expired")
		}
		total += len(expired)
		if err != nil || len(expired) < s.cfg.ExpiryBatch {
			return total, err
		}
	}
}

// ResolveClaimsOnce settles payment claims that never finished (their server died mid-charge):
// voiding the charge with the provider either confirms it happened (the order is paid) or makes
// sure it never will (the order fails and its unit is released).
func (s *Service) ResolveClaimsOnce(ctx context.Context) (int, error) {
	stuck, err := s.Orders.StuckClaims(ctx, s.cfg.ClaimTimeout, 100)
	if err != nil {
		return 0, err
	}
	resolved := 0
	for _, o := range stuck {
		vctx, cancel := context.WithTimeout(ctx, s.cfg.PaymentTimeout)
		rc, err := s.Payments.Void(vctx, o.ID)
		cancel()
		switch {
		case err != nil:
			s.Log.Warn("cannot settle a stuck payment claim yet", "order", o.ID, "err", err)
			continue
		case rc.Status == payment.Succeeded:
			if err := s.settlePaid(ctx, o, rc.ID); err != nil {
				s.Log.Warn("record a stuck claim's payment", "order", o.ID, "err", err)
				continue
			}
		default:
			if err := s.failClaimed(ctx, o, "claim_abandoned", nil); err != nil {
				continue
			}
		}
		resolved++
	}
	if len(stuck) > 0 && resolved < len(stuck) {
		return resolved, errors.New("some payment claims are still unresolved")
	}
	return resolved, nil
}
