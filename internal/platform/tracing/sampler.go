package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// keepFailures is a parent-based ratio sampler that also samples every span started with
// Failure's attribute: a request the ratio did not pick costs a span that records nothing, and
// only when it fails is it recorded again, after the fact (Failure), whatever the ratio said. A kept
// failure is its server span alone (the route, the outcome and the error, which is what a pager
// needs); the whole tree comes with the sampled traces.
type keepFailures struct{ sdktrace.Sampler }

// keptFailure marks the span Failure starts.
var keptFailure = attribute.Key("fsctl.kept_failure")

func (k keepFailures) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	for _, a := range p.Attributes {
		if a.Key == keptFailure {
			return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample,
				Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
		}
	}
	return k.Sampler.ShouldSample(p)
}

func (k keepFailures) Description() string { return "KeepFailures{" + k.Sampler.Description() + "}" }

// Failure records a failed operation the sampler did not pick, as a span of its own from start to
// now in parent's trace (parent: the context the operation's span was started from), with err and
// attrs. It does nothing when tr is nil.
func Failure(parent context.Context, tr trace.Tracer, name string, kind trace.SpanKind, start time.Time, err error, attrs ...attribute.KeyValue) {
	if tr == nil {
		return
	}
	_, span := tr.Start(parent, name, trace.WithSpanKind(kind), trace.WithTimestamp(start),
		trace.WithAttributes(append(attrs, keptFailure.Bool(true))...))
	Fail(span, err)
	span.End()
}

// Start starts a span with tr, or returns ctx and a span that does nothing when tr is nil (tracing
// off): the hot path then pays a nil check, not a context allocation per span.
func Start(ctx context.Context, tr trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if tr == nil {
		return ctx, noopSpan
	}
	return tr.Start(ctx, name, opts...)
}

var noopSpan = trace.SpanFromContext(context.Background())

// Child starts a span of kind under ctx's span. When that span is not sampled the child would not
// be either (the sampler is parent-based), so Child returns ctx and a span that does nothing without
// asking the SDK: an unsampled purchase pays no allocation per step. Set attributes only when the
// span IsRecording, so they are not built for nothing.
func Child(ctx context.Context, tr trace.Tracer, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if tr == nil || !trace.SpanContextFromContext(ctx).IsSampled() {
		return ctx, noopSpan
	}
	return tr.Start(ctx, name, trace.WithSpanKind(kind))
}

// Tracer returns tp's tracer for fsctl's instrumentation, or nil when tp is nil or not recording
// anything (see Start).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	if _, ok := tp.(*sdktrace.TracerProvider); !ok {
		return nil
	}
	return tp.Tracer("github.com/fsctl/fsctl")
}

// Fail marks span as failed with err (a nil err changes nothing).
func Fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// Propagator carries a span's context between processes the W3C way (traceparent, tracestate):
// in HTTP headers to and from the checkout and its payment provider, and in Kafka message headers
// from the hand-off to the order consumer.
var Propagator propagation.TraceContext
