package ingest

import (
	"context"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// Trace makes the recorder trace the orders whose OrderPlaced carries a sampled trace context:
// each gets a consumer span in the buyer's trace, with the PostgreSQL batch that recorded it as a
// child. Untraced messages cost nothing.
func (c *Recorder) Trace(tp trace.TracerProvider) { c.tracer = tracing.Tracer(tp) }

// batchTrace holds the spans of one batch's traced orders; a nil *batchTrace traces nothing.
type batchTrace struct {
	tracer trace.Tracer
	spans  map[uuid.UUID]trace.Span
	ctxs   map[uuid.UUID]context.Context
}

// traceBatch starts a consumer span for each OrderPlaced of the batch that carries a sampled
// trace context (placed[i] came from src[i]).
func (c *Recorder) traceBatch(ctx context.Context, placed []events.OrderPlaced, src []kafka.Message, size int) *batchTrace {
	if c.tracer == nil {
		return nil
	}
	var b *batchTrace
	for i, m := range src {
		pctx := events.TraceContext(ctx, m)
		if !trace.SpanContextFromContext(pctx).IsSampled() {
			continue
		}
		if b == nil {
			b = &batchTrace{tracer: c.tracer, spans: map[uuid.UUID]trace.Span{}, ctxs: map[uuid.UUID]context.Context{}}
		}
		sctx, span := c.tracer.Start(pctx, "process OrderPlaced", trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attribute.String("messaging.system", "kafka"), attribute.String("messaging.operation.type", "process"),
				attribute.String("messaging.destination.name", m.Topic), attribute.Int("messaging.destination.partition.id", m.Partition),
				attribute.Int64("messaging.kafka.offset", m.Offset), attribute.Int("messaging.batch.message_count", size),
				attribute.String("fsctl.order", placed[i].OrderID.String())))
		b.spans[placed[i].OrderID] = span
		b.ctxs[placed[i].OrderID] = sctx
	}
	return b
}

// step runs fn as a child span of every traced order in ids (one database round trip that
// recorded them all), and returns fn's error.
func (b *batchTrace) step(name string, ids []uuid.UUID, fn func() error, attrs ...attribute.KeyValue) error {
	if b == nil {
		return fn()
	}
	var children []trace.Span
	for _, id := range ids {
		if ctx, ok := b.ctxs[id]; ok {
			_, s := b.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			children = append(children, s)
		}
	}
	err := fn()
	for _, s := range children {
		tracing.Fail(s, err)
		s.End()
	}
	return err
}

// result notes what became of one traced order.
func (b *batchTrace) result(id uuid.UUID, what string) {
	if b == nil {
		return
	}
	if s, ok := b.spans[id]; ok {
		s.SetAttributes(attribute.String("fsctl.result", what))
	}
}

// end ends every span of the batch; err is the batch's failure (it is retried whole).
func (b *batchTrace) end(err error) {
	if b == nil {
		return
	}
	for _, s := range b.spans {
		tracing.Fail(s, err)
		s.End()
	}
}
