package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/platform/reach"
	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// traceFlags turn on OpenTelemetry tracing; the standard OTEL_* variables do the same without them.
type traceFlags struct {
	endpoint string
	ratio    float64
	set      func() bool // whether --trace-sample was given
}

func (t *traceFlags) bind(fs *pflag.FlagSet) {
	addressString(fs, &t.endpoint, "trace-endpoint", "", "send traces over OTLP to this collector, e.g. http://otel-collector:4318 (grpc with OTEL_EXPORTER_OTLP_PROTOCOL=grpc); empty: OTEL_EXPORTER_OTLP_ENDPOINT decides, and without it tracing is off")
	fs.Float64Var(&t.ratio, "trace-sample", tracing.DefaultRatio, "share of purchases traced whole, 0 to 1 (default OTEL_TRACES_SAMPLER_ARG when set); a caller's sampled traceparent is followed, and a request answered 5xx is always kept")
	t.set = func() bool { return fs.Changed("trace-sample") }
}

// setup starts tracing for service when it is configured; the returned provider is flushed by its
// Shutdown (a nil one traces nothing).
func (t *traceFlags) setup(ctx context.Context, service, version string, log *slog.Logger) (*tracing.Provider, error) {
	ratio := -1.0 // the environment's, else the default
	if t.set() {
		if t.ratio < 0 || t.ratio > 1 {
			return nil, usageError(fmt.Errorf("--trace-sample %g: want a share between 0 and 1", t.ratio))
		}
		ratio = t.ratio
	}
	p, err := tracing.Setup(ctx, tracing.Config{Endpoint: t.endpoint, Ratio: ratio, Service: service, Version: version})
	if err != nil {
		return nil, usageError(err)
	}
	if p.Enabled() {
		log.Info("tracing on", "endpoint", reach.Redact(p.Endpoint), "sample", p.Ratio, "failures", "always kept")
	}
	return p, nil
}

// flushTraces exports what is buffered before the process exits.
func flushTraces(p *tracing.Provider, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn("flushing traces", "err", err)
	}
}
