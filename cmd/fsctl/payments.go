package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/checkout/payment/fake"
)

// paymentsServeOptions are the flags of `fsctl payments serve`.
type paymentsServeOptions struct {
	addr        string
	latency     time.Duration
	jitter      time.Duration
	declineRate float64
	errorRate   float64
	outages     []string
	seed        uint64
}

func newPaymentsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "payments",
		Short: "Run the bundled fake payment provider",
		Long: "payments runs a fake payment provider that the checkout server charges through. It answers like a\n" +
			"real one (idempotent by order id, voids, declines) and can be made slow, flaky or down for game days.",
	}
	cmd.AddCommand(newPaymentsServeCmd())
	return cmd
}

func newPaymentsServeCmd() *cobra.Command {
	var o paymentsServeOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the fake payment provider until interrupted",
		Long: `Serve the fake payment provider on --addr until SIGINT or SIGTERM.

Charges are recorded by idempotency key (the order id): a repeat gets the first answer, and a voided
key can never be charged. Magic tokens decide a charge whatever the rates: tok_ok succeeds,
tok_decline declines, tok_error answers 503. Each charge, lookup and void takes --latency give or
take --jitter; --error-rate answers that share of charges 503 (nothing charged) and --decline-rate
declines that share of the rest. An --outage FROM+FOR answers 503 to everything from FROM after
start for FOR. Decisions are repeatable for a given --seed.

Change the behaviour while it runs with PUT /v1/behavior (fields left out keep their values; GET
shows them with the uptime); counts are at GET /v1/stats.`,
		Example: `  fsctl payments serve                                        # a healthy provider on 127.0.0.1:8090
  fsctl payments serve --latency 200ms --jitter 50ms --decline-rate 0.1
  fsctl payments serve --error-rate 0.2 --outage 30s+10s --outage 2m+30s
  curl -X PUT localhost:8090/v1/behavior -d '{"errorRate":1}'   # hurt it mid-sale`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.config()
			if err != nil {
				return err
			}
			return servePayments(cmd, o.addr, cfg)
		},
	}
	o.bind(cmd.Flags())
	return cmd
}

func (o *paymentsServeOptions) bind(f *pflag.FlagSet) {
	f.StringVar(&o.addr, "addr", "127.0.0.1:8090", "listen address")
	f.DurationVar(&o.latency, "latency", 0, "time each call takes")
	f.DurationVar(&o.jitter, "jitter", 0, "latency varies by up to this much either way")
	f.Float64Var(&o.declineRate, "decline-rate", 0, "share of charges declined, 0..1")
	f.Float64Var(&o.errorRate, "error-rate", 0, "share of charges answered 503 without charging, 0..1")
	f.StringArrayVar(&o.outages, "outage", nil, "outage window FROM+FOR after start, e.g. 30s+10s (repeatable)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the random decisions")
}

// config checks the flags and turns them into the provider's Config.
func (o paymentsServeOptions) config() (fake.Config, error) {
	cfg := fake.Config{
		Latency: o.latency, Jitter: o.jitter, DeclineRate: o.declineRate, ErrorRate: o.errorRate, Seed: int64(o.seed), // the same seed as blast --seed and gameday --seed take
	}
	for _, s := range o.outages {
		w, err := parseOutage(s)
		if err != nil {
			return fake.Config{}, err
		}
		cfg.Outages = append(cfg.Outages, w)
	}
	switch {
	case o.latency < 0 || o.jitter < 0:
		return fake.Config{}, errors.New("--latency and --jitter must not be negative")
	case o.declineRate < 0 || o.declineRate > 1:
		return fake.Config{}, fmt.Errorf("--decline-rate %v: must lie in 0..1", o.declineRate)
	case o.errorRate < 0 || o.errorRate > 1:
		return fake.Config{}, fmt.Errorf("--error-rate %v: must lie in 0..1", o.errorRate)
	}
	if err := cfg.Validate(); err != nil { // NaN and whatever the cases above miss
		return fake.Config{}, err
	}
	return cfg, nil
}

// parseOutage reads FROM+FOR, both Go durations: "30s+10s" is an outage from 30s to 40s after start.
func parseOutage(s string) (fake.Window, error) {
	from, length, ok := strings.Cut(s, "+")
	if !ok {
		return fake.Window{}, fmt.Errorf("--outage %q: want FROM+FOR, e.g. 30s+10s", s)
	}
	f, err := time.ParseDuration(from)
	if err != nil || f < 0 {
		return fake.Window{}, fmt.Errorf("--outage %q: start %q is not a duration of 0 or more, e.g. 30s", s, from)
	}
	l, err := time.ParseDuration(length)
	if err != nil || l <= 0 {
		return fake.Window{}, fmt.Errorf("--outage %q: length %q is not a positive duration, e.g. 10s", s, length)
	}
	return fake.Window{From: f, To: f + l}, nil
}

func servePayments(cmd *cobra.Command, addr string, cfg fake.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fake payment provider: %w", err)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	log.Info("fake payment provider listening", "url", "http://"+ln.Addr().String(),
		"latency", cfg.Latency, "jitter", cfg.Jitter, "declineRate", cfg.DeclineRate,
		"errorRate", cfg.ErrorRate, "outages", len(cfg.Outages), "seed", cfg.Seed)
	err = fake.New(cfg, nil).Serve(cmd.Context(), ln)
	log.Info("fake payment provider stopped")
	return err
}
