package tracing_test

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// collector is an OTLP/HTTP receiver that keeps the names of the spans it was sent.
type collector struct {
	mu    sync.Mutex
	names []string
	svc   string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" {
		http.Error(w, "no such path "+r.URL.Path, http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.Resource.GetAttributes() {
			if kv.Key == "service.name" {
				c.svc = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil)
}

// TestSetupExportsOverOTLP sends spans through the real exporter to an OTLP/HTTP receiver: what
// the ratio keeps and the failures recorded with Failure arrive, under the configured service name; the rest does not.
func TestSetupExportsOverOTLP(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	t.Setenv("OTEL_SERVICE_NAME", "")
	p, err := tracing.Setup(context.Background(), tracing.Config{Endpoint: srv.URL, Ratio: 0, Service: "fsctl-test", Version: "v0"})
	if err != nil || !p.Enabled() {
		t.Fatalf("Setup: %v, enabled %v", err, p.Enabled())
	}
	tr := p.TracerProvider().Tracer("test")
	_, ok := tr.Start(context.Background(), "went well", trace.WithSpanKind(trace.SpanKindServer))
	ok.End()
	_, dropped := tr.Start(context.Background(), "failed, not kept", trace.WithSpanKind(trace.SpanKindServer))
	dropped.SetStatus(codes.Error, "a status alone is not Failure")
	dropped.End()
	tracing.Failure(context.Background(), tracing.Tracer(p.TracerProvider()), "failed", trace.SpanKindServer, time.Now(), errors.New("redis down"))
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.names) != 1 || col.names[0] != "failed" {
		t.Errorf("the collector got %v, want only the failure", col.names)
	}
	if col.svc != "fsctl-test" {
		t.Errorf("service.name %q, want fsctl-test", col.svc)
	}
}

// TestSetupIsOffUnlessConfigured: no endpoint, or the SDK switched off, traces nothing.
func TestSetupIsOffUnlessConfigured(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"no endpoint":   {},
		"sdk disabled":  {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
		"exporter none": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"} {
				t.Setenv(k, env[k])
			}
			p, err := tracing.Setup(context.Background(), tracing.Config{Ratio: -1, Service: "x"})
			if err != nil || p.Enabled() {
				t.Fatalf("Setup: %v, enabled %v: want off", err, p.Enabled())
			}
			if tracing.Tracer(p.TracerProvider()) != nil {
				t.Error("a tracer for instrumentation while tracing is off")
			}
		})
	}
}

// TestSetupRefusesWhatItCannotDo names the setting to fix.
func TestSetupRefusesWhatItCannotDo(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		cfg  tracing.Config
	}{
		{"bad endpoint", nil, tracing.Config{Endpoint: "collector:4318", Ratio: 0.5}},
		{"ratio above 1", nil, tracing.Config{Endpoint: "http://c:4318", Ratio: 2}},
		{"zipkin exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, tracing.Config{Endpoint: "http://c:4318"}},
		{"unknown protocol", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, tracing.Config{Endpoint: "http://c:4318"}},
		{"bad sampler arg", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "lots"}, tracing.Config{Endpoint: "http://c:4318", Ratio: -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			if p, err := tracing.Setup(context.Background(), c.cfg); err == nil {
				_ = p.Shutdown(context.Background())
				t.Fatal("Setup accepted it")
			}
		})
	}
}

func TestRatioFromEnv(t *testing.T) {
	for _, c := range []struct {
		sampler, arg string
		want         float64
	}{
		{"", "", tracing.DefaultRatio},
		{"parentbased_traceidratio", "0.25", 0.25},
		{"traceidratio", "", 1},
		{"always_on", "", 1},
		{"parentbased_always_off", "", 0},
	} {
		t.Setenv("OTEL_TRACES_SAMPLER", c.sampler)
		t.Setenv("OTEL_TRACES_SAMPLER_ARG", c.arg)
		if got, err := tracing.RatioFromEnv(); err != nil || got != c.want {
			t.Errorf("OTEL_TRACES_SAMPLER=%q ARG=%q: %v, %v; want %v", c.sampler, c.arg, got, err, c.want)
		}
	}
}

// TestConsoleExporter: OTEL_TRACES_EXPORTER=console traces without a collector.
func TestConsoleExporter(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	p, err := tracing.Setup(context.Background(), tracing.Config{Ratio: 1, Service: "x"})
	if err != nil || !p.Enabled() || p.Endpoint != "console" {
		t.Fatalf("Setup: %v, enabled %v, endpoint %q: want the console", err, p.Enabled(), p.Endpoint)
	}
	_ = p.Shutdown(context.Background())
}
