package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/tracing"
	"github.com/fsctl/fsctl/server"
)

const purchaseRoute = "POST /api/v1/sales/{sale}/items/{item}/purchase"

// TestOnePurchaseIsOneTrace follows one purchase from the HTTP request to PostgreSQL in an
// in-process span recorder: one trace, in which the consumer's span is the child of the hand-off's
// producer span (its context travelled in the Kafka message's headers), and PostgreSQL's batch is
// the consumer span's child.
func TestOnePurchaseIsOneTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := tracing.NewTracerProvider(rec, 1, nil)
	e := newEnvWith(t, envOptions{Quantity: 5, Limit: 1, Tracer: tp})
	if code, body := e.buy("u-trace", "k-trace"); code != http.StatusAccepted {
		t.Fatalf("purchase: %d %s", code, body)
	}
	byName := waitSpans(t, rec, "process OrderPlaced", "postgres place_orders")
	root := one(t, byName, purchaseRoute)
	t.Logf("the purchase's trace (docs/deploy.md, \"Traces\"):\n%s", tree(rec.Ended(), root))
	if root.Parent().IsValid() {
		t.Errorf("the server span has a parent %v: want the root of the trace", root.Parent())
	}
	wantAttr(t, root, "fsctl.outcome", attribute.StringValue("RESERVED"))
	wantAttr(t, root, "http.response.status_code", attribute.IntValue(http.StatusAccepted))
	wantAttr(t, root, "fsctl.sale", attribute.StringValue(e.sale.ID))
	publish := one(t, byName, "publish OrderPlaced")
	process := one(t, byName, "process OrderPlaced")
	parents := map[string]sdktrace.ReadOnlySpan{
		"sale lookup": root, "admission": root, "reserve": root, "publish OrderPlaced": root, "confirm": root,
		"process OrderPlaced": publish, "postgres place_orders": process,
	}
	for name, parent := range parents {
		s := one(t, byName, name)
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("%s is in trace %s, the purchase in %s", name, s.SpanContext().TraceID(), root.SpanContext().TraceID())
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s's parent is %s, want %s (%s)", name, s.Parent().SpanID(), parent.SpanContext().SpanID(), parent.Name())
		}
	}
	if !process.Parent().IsRemote() {
		t.Error("the consumer's parent is not remote: its context did not come from the message")
	}
	wantAttr(t, process, "fsctl.result", attribute.StringValue("placed"))
	// The latency histogram links to the trace: its observation carries the trace id (OpenMetrics).
	_, metrics := e.do(http.MethodGet, "/metrics", "", map[string]string{"Accept": "application/openmetrics-text; version=1.0.0"}, nil)
	if want := `trace_id="` + root.SpanContext().TraceID().String() + `"`; !strings.Contains(metrics, want) {
		t.Errorf("no exemplar %s on the request latency histogram", want)
	}
	wantAttr(t, one(t, byName, "reserve"), "fsctl.outcome", attribute.StringValue("RESERVED"))
}

// TestSamplingKeepsFailuresAndFollowsTheCaller: at a ratio of 0 nothing that went well is kept, a
// purchase answered 5xx keeps its server span, and a caller's sampled traceparent is followed.
func TestSamplingKeepsFailuresAndFollowsTheCaller(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	e := newEnvWith(t, envOptions{Quantity: 5, Limit: 1, Tracer: tracing.NewTracerProvider(rec, 0, nil)})
	if code, body := e.buy("u-ok", "k-ok"); code != http.StatusAccepted {
		t.Fatalf("purchase: %d %s", code, body)
	}
	if code, _ := e.buy("u-ok", "k-again"); code != http.StatusConflict {
		t.Fatalf("second purchase of a limit-1 buyer: %d, want 409", code)
	}
	// The caller's trace, sampled: followed whole, whatever the ratio.
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	code, _ := e.do(http.MethodPost, e.purchasePath(), "u-caller", map[string]string{"Idempotency-Key": "k-caller", "traceparent": caller}, nil)
	if code != http.StatusAccepted {
		t.Fatalf("traced purchase: %d", code)
	}
	// Redis loses the item: the next purchase is 503, a failure to keep.
	if err := e.app.Stock.Reset(context.Background(), e.sale); err != nil {
		t.Fatal(err)
	}
	if code, body := e.buy("u-fail", "k-fail"); code != http.StatusServiceUnavailable {
		t.Fatalf("purchase with the item gone from Redis: %d %s, want 503", code, body)
	}
	byName := waitSpans(t, rec, "process OrderPlaced")
	var failed, followed int
	for _, s := range byName[purchaseRoute] {
		switch {
		case s.SpanContext().TraceID().String() == "0af7651916cd43dd8448eb211c80319c":
			followed++
		case s.Status().Code == codes.Error:
			failed++
			wantAttr(t, s, "fsctl.outcome", attribute.StringValue("UNAVAILABLE"))
		default:
			t.Errorf("kept a purchase span at ratio 0 that neither failed nor was the caller's: %v %v", s.Status(), attrs(s))
		}
	}
	if failed != 1 || followed != 1 {
		t.Errorf("kept %d failed and %d caller's purchase spans, want 1 and 1", failed, followed)
	}
	for _, s := range byName["reserve"] {
		if s.SpanContext().TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("a reserve span outside the caller's trace: the children of unsampled requests must not be recorded")
		}
	}
}

// TestMetricsOnTheirOwnListener: with a metrics address, /metrics leaves the API's port for its
// own listener, which answers the probes too.
func TestMetricsOnTheirOwnListener(t *testing.T) {
	e := newEnvWith(t, envOptions{Quantity: 1, Limit: 1, Tune: func(c *server.Config) { c.MetricsAddr = "127.0.0.1:0" }})
	if code, _ := e.do(http.MethodGet, "/metrics", "", nil, nil); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the API's port: %d, want 404", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	at, err := e.app.MetricsAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + at.String()
	for path, want := range map[string]string{"/metrics": "fsctl_build_info", "/healthz": "ok", "/readyz": "ready"} {
		code, body := e.doAt(base, http.MethodGet, path, "", nil, nil)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s on the metrics listener: %d %.200s, want 200 with %q", path, code, body, want)
		}
	}
	if code, _ := e.doAt(base, http.MethodPost, "/api/v1/sales/"+e.sale.ID+"/items/hot/purchase", "u", nil, nil); code == http.StatusAccepted {
		t.Error("the metrics listener took a purchase")
	}
}

// waitSpans waits until the recorder has ended a span of every name in names, and returns the
// ended spans by name.
func waitSpans(t *testing.T, rec *tracetest.SpanRecorder, names ...string) map[string][]sdktrace.ReadOnlySpan {
	t.Helper()
	var byName map[string][]sdktrace.ReadOnlySpan
	eventually.OK(t, 30*time.Second, func() error {
		byName = map[string][]sdktrace.ReadOnlySpan{}
		for _, s := range rec.Ended() {
			byName[s.Name()] = append(byName[s.Name()], s)
		}
		if slices.ContainsFunc(names, func(n string) bool { return len(byName[n]) == 0 }) {
			return fmt.Errorf("no span %v; ended: %v", names, keys(byName))
		}
		return nil
	})
	return byName
}

func one(t *testing.T, byName map[string][]sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	if len(byName[name]) != 1 {
		t.Fatalf("%d spans named %q, want 1 (spans: %v)", len(byName[name]), name, keys(byName))
	}
	return byName[name][0]
}

func wantAttr(t *testing.T, s sdktrace.ReadOnlySpan, key string, want attribute.Value) {
	t.Helper()
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			if kv.Value != want {
				t.Errorf("%s: %s = %v, want %v", s.Name(), key, kv.Value.String(), want.String())
			}
			return
		}
	}
	t.Errorf("%s has no attribute %s (it has %v)", s.Name(), key, attrs(s))
}

func attrs(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, kv := range s.Attributes() {
		out = append(out, string(kv.Key)+"="+kv.Value.String())
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// tree draws the spans under root as text: name, kind, start after root's start, duration, and
// the fsctl attributes.
func tree(spans []sdktrace.ReadOnlySpan, root sdktrace.ReadOnlySpan) string {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		children[s.Parent().SpanID()] = append(children[s.Parent().SpanID()], s)
	}
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, prefix, branch string)
	walk = func(s sdktrace.ReadOnlySpan, prefix, branch string) {
		var notes []string
		for _, kv := range s.Attributes() {
			if k := string(kv.Key); strings.HasPrefix(k, "fsctl.") && k != "fsctl.sale" && k != "fsctl.order" || k == "http.response.status_code" {
				notes = append(notes, strings.TrimPrefix(k, "fsctl.")+"="+kv.Value.String())
			}
		}
		fmt.Fprintf(&b, "%-58s %-9s +%6.2fms %7.2fms  %s\n", prefix+branch+s.Name(), s.SpanKind(),
			float64(s.StartTime().Sub(root.StartTime()).Microseconds())/1000, float64(s.EndTime().Sub(s.StartTime()).Microseconds())/1000,
			strings.Join(notes, " "))
		kids := children[s.SpanContext().SpanID()]
		slices.SortFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
		next := prefix
		switch branch {
		case "├─ ":
			next += "│  "
		case "└─ ":
			next += "   "
		}
		for i, k := range kids {
			br := "├─ "
			if i == len(kids)-1 {
				br = "└─ "
			}
			walk(k, next, br)
		}
	}
	walk(root, "", "")
	return b.String()
}
