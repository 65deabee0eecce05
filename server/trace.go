package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// Span attributes of the purchase path, beside the HTTP ones of the semantic conventions.
var (
	attrSale    = attribute.Key("fsctl.sale")
	attrItem    = attribute.Key("fsctl.item")
	attrOutcome = attribute.Key("fsctl.outcome")
	attrOrder   = attribute.Key("fsctl.order")
)

// untraced routes are probes and scrapes: one span each every few seconds per instance is noise.
var untraced = map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /metrics": true}

// requestTrace is one traced request: its server span, and what a failure the sampler did not pick
// needs to be kept after all (tracing.Failure).
type requestTrace struct {
	span    trace.Span
	parent  context.Context // the caller's context, before the server span
	route   string
	start   time.Time
	outcome outcome.Code
	err     error
}

type requestTraceKey struct{}

// traceRequest starts the server span of one request (named by its route pattern, as the
// semantic conventions ask); nil when tracing is off or the route is a probe. A caller's
// traceparent is followed.
func (s *Server) traceRequest(route string, r *http.Request) (*http.Request, *requestTrace) {
	if s.tracer == nil || untraced[route] {
		return r, nil
	}
	rt := &requestTrace{route: route, start: time.Now()}
	rt.parent = tracing.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := s.tracer.Start(rt.parent, route, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(rt.start))
	if span.IsRecording() { // attributes are built only for the spans kept: 99% of a burst's are not
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route),
			attribute.String("url.path", r.URL.Path))
	}
	rt.span = span
	return r.WithContext(context.WithValue(ctx, requestTraceKey{}, rt)), rt
}

// end ends a request's span with its status. A 5xx is a failure: when the sampler did not pick
// the request, it is recorded now as a span of its own, so every failure is kept.
func (rt *requestTrace) end(r *http.Request, tr trace.Tracer, status int) {
	if rt == nil {
		return
	}
	failed := status >= http.StatusInternalServerError
	if !rt.span.IsRecording() {
		rt.span.End()
		if failed {
			err := rt.err
			if err == nil {
				err = errors.New(http.StatusText(status))
			}
			tracing.Failure(rt.parent, tr, rt.route, trace.SpanKindServer, rt.start, err,
				attribute.String("http.request.method", r.Method), attribute.String("http.route", rt.route),
				attribute.String("url.path", r.URL.Path), attribute.Int("http.response.status_code", status),
				attrOutcome.String(string(rt.outcome)))
		}
		return
	}
	rt.span.SetAttributes(attribute.Int("http.response.status_code", status))
	if failed {
		rt.span.SetStatus(codes.Error, strconv.Itoa(status)+" "+http.StatusText(status))
	}
	rt.span.End()
}

// traceOutcome notes a request's outcome code (and, for a failure, its error) on its span.
func (s *Server) traceOutcome(r *http.Request, code outcome.Code, err error) {
	if s.tracer == nil { // no request trace (traceRequest); not a walk up the request's contexts to learn that
		return
	}
	rt, _ := r.Context().Value(requestTraceKey{}).(*requestTrace)
	if rt == nil {
		return
	}
	rt.outcome = code
	if err != nil && outcome.HTTPStatus(code) >= http.StatusInternalServerError {
		rt.err = err
		tracing.Fail(rt.span, err)
	}
	if rt.span.IsRecording() {
		rt.span.SetAttributes(attrOutcome.String(string(code)))
	}
}

// traceItem names the sale and item on a purchase's server span.
func (s *Server) traceItem(r *http.Request, saleID, itemID string) {
	if s.tracer == nil {
		return
	}
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetAttributes(attrSale.String(saleID), attrItem.String(itemID))
	}
}

// endReserve ends the reserve script's span with what the script answered.
func endReserve(span trace.Span, rv stock.Reservation, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(attribute.String("db.system.name", "redis"), attribute.Int("fsctl.shards", rv.Shards))
	if err != nil {
		tracing.Fail(span, err)
	} else {
		span.SetAttributes(attrOutcome.String(string(rv.Outcome)), attribute.Int("fsctl.shard", rv.Shard),
			attribute.Bool("fsctl.replay", rv.Replay), attribute.Int("fsctl.borrowed", rv.Borrowed))
		if rv.Outcome == outcome.Reserved {
			span.SetAttributes(attrOrder.String(rv.OrderID.String()), attribute.Int64("fsctl.epoch", rv.Epoch))
		}
	}
	span.End()
}

// sampledID is the trace id of a request whose trace is kept whole, for the latency histogram's
// exemplar; empty otherwise.
func (rt *requestTrace) sampledID() string {
	if rt == nil || !rt.span.SpanContext().IsSampled() {
		return ""
	}
	return rt.span.SpanContext().TraceID().String()
}
