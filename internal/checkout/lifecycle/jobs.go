package lifecycle

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/platform/tracing"
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
				err := s.traced(ctx, "lifecycle expiry", func(ctx context.Context) (int, error) { return s.ExpireOnce(ctx) })
				if err != nil && ctx.Err() == nil {
					s.Log.Warn("expiry round failed; retrying next tick", "err", err)
				}
			}
		case <-sweep.C:
			if s.enabled(JobSweeper) {
				err := s.traced(ctx, "lifecycle sweep", func(ctx context.Context) (int, error) {
					rep, err := s.SweepOnce(ctx)
					return rep.Republished + rep.Released + rep.Settled + rep.Transfers, err
				})
				if err != nil && ctx.Err() == nil {
					s.Log.Warn("sweep round failed; retrying next tick", "err", err)
				}
				if err := s.traced(ctx, "lifecycle resolve claims", s.ResolveClaimsOnce); err != nil && ctx.Err() == nil {
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

// traced runs one round of a job as a root span of its own (sampled at the process's ratio, so a
// job that runs every second costs next to nothing; a round that fails is kept), with how many
// orders it handled.
func (s *Service) traced(ctx context.Context, name string, round func(context.Context) (int, error)) error {
	start := time.Now()
	rctx, span := tracing.Start(ctx, s.tracer, name, trace.WithNewRoot())
	n, err := round(rctx)
	span.SetAttributes(attribute.Int("fsctl.orders", n))
	tracing.Fail(span, err)
	kept := span.IsRecording() // before End, after which no span records
	span.End()
	if err != nil && !kept && ctx.Err() == nil {
		tracing.Failure(ctx, s.tracer, name, trace.SpanKindInternal, start, err, attribute.Int("fsctl.orders", n))
	}
	return err
}
