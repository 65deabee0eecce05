package events

import (
	"context"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// headers adapts a message's headers to OpenTelemetry's carrier.
type headers struct{ m *kafka.Message }

func (h headers) Get(key string) string {
	for _, x := range h.m.Headers {
		if x.Key == key {
			return string(x.Value)
		}
	}
	return ""
}

func (h headers) Set(key, value string) {
	for i, x := range h.m.Headers {
		if x.Key == key {
			h.m.Headers[i].Value = []byte(value)
			return
		}
	}
	h.m.Headers = append(h.m.Headers, kafka.Header{Key: key, Value: []byte(value)})
}

func (h headers) Keys() []string {
	out := make([]string, len(h.m.Headers))
	for i, x := range h.m.Headers {
		out[i] = x.Key
	}
	return out
}

// injectTrace puts ctx's span context in m's headers; nothing when ctx carries no sampled span,
// so an untraced message costs no header bytes.
func injectTrace(ctx context.Context, m *kafka.Message) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && sc.IsSampled() {
		tracing.Propagator.Inject(ctx, headers{m})
	}
}

// TraceContext returns ctx with the span context m carries, if any, as a remote parent.
func TraceContext(ctx context.Context, m kafka.Message) context.Context {
	return tracing.Propagator.Extract(ctx, headers{&m})
}
