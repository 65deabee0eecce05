// Package tracing sets up OpenTelemetry traces for fsctl: an OTLP exporter configured the standard
// way (OTEL_* variables, or a flag), and a sampler that stays cheap during a burst: a parent-based
// ratio for the traces it keeps whole, and every server request that fails kept whatever the ratio.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/fsctl/fsctl/internal/platform/reach"
)

// DefaultRatio is the share of purchases traced whole when neither a flag nor OTEL_TRACES_SAMPLER_ARG
// says otherwise. It is lower than the specification's default (every trace): at 50,000 purchases
// in a second, 1% is still 500 whole traces, and failures are kept anyway.
const DefaultRatio = 0.01

// Config says where traces go and how many are kept.
type Config struct {
	// Endpoint is the OTLP collector's base URL (http://collector:4318, or :4317 with the grpc
	// protocol). Empty: the OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT
	// variables decide, and without them tracing is off.
	Endpoint string
	// Ratio is the share of traces started here that are kept whole, 0 to 1; negative means the
	// OTEL_TRACES_SAMPLER(_ARG) variables, else DefaultRatio.
	Ratio float64
	// Service and Version name this process (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win).
	Service, Version string
}

// Provider is the process's tracer provider; a zero or nil Provider traces nothing.
type Provider struct {
	sdk   *sdktrace.TracerProvider
	Ratio float64
	// Endpoint is where spans go, for the start-up log line.
	Endpoint string
}

// Enabled reports whether spans are recorded and exported.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// TracerProvider returns the provider for instrumented code: a no-op one when tracing is off.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if !p.Enabled() {
		return noop.NewTracerProvider()
	}
	return p.sdk
}

// Shutdown exports the spans still buffered and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// Setup builds the provider cfg and the environment ask for; tracing is off (a nil Provider, no
// error) unless an endpoint is configured, and OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none
// turn it off whatever else is set. OTEL_TRACES_EXPORTER=console writes the spans to stderr instead.
func Setup(ctx context.Context, cfg Config) (*Provider, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	endpoint := cfg.Endpoint
	switch e := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); e {
	case "none":
		return nil, nil
	case "console":
		endpoint = "console"
	case "", "otlp":
		if endpoint == "" {
			endpoint = firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		if endpoint == "" {
			return nil, nil
		}
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: fsctl exports traces with otlp, console (JSON on stderr) or none", e)
	}
	ratio := cfg.Ratio
	if ratio < 0 {
		var err error
		if ratio, err = RatioFromEnv(); err != nil {
			return nil, err
		}
	}
	if ratio > 1 {
		return nil, fmt.Errorf("trace sample ratio %g: must be between 0 and 1", ratio)
	}
	exp, err := exporter(ctx, endpoint, cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", cfg.Service), attribute.String("service.version", cfg.Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return &Provider{sdk: NewTracerProvider(sdktrace.NewBatchSpanProcessor(exp), ratio, res), Ratio: ratio, Endpoint: endpoint}, nil
}

// NewTracerProvider returns a provider that keeps ratio of the traces begun here (a caller's
// sampled traceparent is followed) and every failed server span, and hands the spans it keeps to
// next. Tests give it an in-memory recorder.
func NewTracerProvider(next sdktrace.SpanProcessor, ratio float64, res *resource.Resource) *sdktrace.TracerProvider {
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithSampler(keepFailures{sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))}),
		sdktrace.WithSpanProcessor(next),
	}
	if res != nil {
		opts = append(opts, sdktrace.WithResource(res))
	}
	return sdktrace.NewTracerProvider(opts...)
}

// exporter builds the exporter: JSON lines on stderr for the console (OTEL_TRACES_EXPORTER=console,
// for a look without a collector), else OTLP: HTTP/protobuf unless OTEL_EXPORTER_OTLP(_TRACES)_PROTOCOL says
// grpc. Headers, timeouts, TLS and compression come from the OTEL_EXPORTER_OTLP_* variables, which
// the exporters read themselves.
func exporter(ctx context.Context, to, endpoint string) (sdktrace.SpanExporter, error) {
	if to == "console" {
		return stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
	}
	proto := firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	switch proto {
	case "", "http/protobuf":
		var opts []otlptracehttp.Option
		if endpoint != "" {
			u, err := url.Parse(endpoint)
			if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
				return nil, fmt.Errorf("trace endpoint %q: want the collector's base URL, e.g. http://otel-collector:4318", reach.Redact(endpoint))
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/traces" // a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		}
		return otlptracehttp.New(ctx, opts...)
	case "grpc":
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: want http/protobuf or grpc", proto)
}

// RatioFromEnv reads the share of traces to keep from OTEL_TRACES_SAMPLER and its argument;
// DefaultRatio when they are not set. Every sampler of the specification's list is parent-based
// here (a caller's decision is followed), and failures are kept whatever it says.
func RatioFromEnv() (float64, error) {
	s := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER_ARG"))
	switch s {
	case "":
		return DefaultRatio, nil
	case "always_on", "parentbased_always_on":
		return 1, nil
	case "always_off", "parentbased_always_off":
		return 0, nil
	case "traceidratio", "parentbased_traceidratio":
		if arg == "" {
			return 1, nil // the specification's default argument
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%s: want a ratio between 0 and 1", arg)
		}
		return r, nil
	}
	return 0, fmt.Errorf("OTEL_TRACES_SAMPLER=%s: want always_on, always_off, traceidratio or their parentbased_ forms", s)
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}
