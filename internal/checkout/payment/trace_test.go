package payment_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/payment/fake"
	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// TestHTTPClientTracesEachCall: a traced charge is a client span in the caller's trace, and the
// provider receives that span as the traceparent of the request.
func TestHTTPClientTracesEachCall(t *testing.T) {
	var got string
	p := fake.New(fake.Config{}, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("traceparent")
		p.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := tracing.NewTracerProvider(rec, 1, nil)
	c := payment.NewHTTPClient(srv.URL, 0)
	c.Trace(tp)
	ctx, parent := tp.Tracer("test").Start(context.Background(), "pay")
	if _, err := c.Charge(ctx, payment.Charge{OrderID: uuid.New(), AmountCents: 100, Currency: "USD", Token: "tok_ok"}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var charge []string
	for _, s := range rec.Ended() {
		if s.Name() != "payment charge" {
			continue
		}
		charge = append(charge, s.Name())
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("the charge's parent is %s, want the caller's span", s.Parent().SpanID())
		}
		want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
		if got != want {
			t.Errorf("the provider got traceparent %q, want %q", got, want)
		}
	}
	if len(charge) != 1 {
		t.Fatalf("%d charge spans, want 1 (ended: %d spans)", len(charge), len(rec.Ended()))
	}
}

// TestHTTPClientUntracedSendsNoTraceparent: with tracing off the provider sees no trace header.
func TestHTTPClientUntracedSendsNoTraceparent(t *testing.T) {
	seen := "unset"
	p := fake.New(fake.Config{}, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("traceparent")
		p.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	if _, err := payment.NewHTTPClient(srv.URL, 0).Charge(context.Background(), payment.Charge{OrderID: uuid.New(), AmountCents: 1, Currency: "USD", Token: "tok_ok"}); err != nil {
		t.Fatal(err)
	}
	if seen != "" {
		t.Errorf("traceparent %q sent with tracing off", seen)
	}
}
