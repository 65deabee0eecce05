package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/tracing"
	"github.com/fsctl/fsctl/server"
)

// BenchmarkPurchaseTracing measures what tracing costs the purchase path that reserves: the
// Redis reserve (batched, as in the server), the hand-off to a real Kafka topic (acks=all) and
// the confirm, with tracing off, sampling 1% of purchases and sampling all of them. Spans go through
// the real OTLP/HTTP exporter (batched) to a local receiver that discards them, so export's CPU
// is in the figure (the receiver's own share is small: one request per 512 spans). Requests go
// straight to the handler; every one is a fresh reservation.
func BenchmarkPurchaseTracing(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer sink.Close()
	verifier, err := auth.NewVerifier(testSecret, nil)
	if err != nil {
		b.Fatal(err)
	}
	pub, err := events.NewPublisher(kafkaconn.Conn{Brokers: testenv.KafkaBrokers(b)}, testenv.KafkaTopic(b, 6))
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	for _, ratio := range []float64{-1, 0.01, 1} {
		name := "trace=off"
		if ratio >= 0 {
			name = fmt.Sprintf("trace=%g%%", ratio*100)
		}
		b.Run(name, func(b *testing.B) {
			_, db, sl := stores(b, sale.Sale{ID: testenv.ID(b, "traced"), OpensAt: time.Now().Add(-time.Minute),
				PerUserLimit: sale.MaxPerUserLimit, HoldTTL: time.Hour, Items: []sale.Item{{ID: "hot", Quantity: 10_000_000}}})
			st := stock.New(testenv.Redis(b), stock.Batch(stock.DefaultBatchMax, stock.DefaultBatchLanes))
			var tp trace.TracerProvider
			if ratio >= 0 {
				exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
				if err != nil {
					b.Fatal(err)
				}
				sdk := tracing.NewTracerProvider(sdktrace.NewBatchSpanProcessor(exp), ratio, nil)
				defer func() { _ = sdk.Shutdown(context.Background()) }()
				tp = sdk
			}
			const users = 20_000 // × 16 units each: more purchases than any run makes
			tokens := make([]string, users)
			for i := range tokens {
				if tokens[i], err = auth.Mint(testSecret, name+"-"+strconv.Itoa(i), time.Now(), time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			cfg := server.DefaultConfig()
			cfg.ReadModelTTL = time.Minute
			h := server.New(cfg, server.Deps{Auth: verifier, Stock: st, Orders: db, Publisher: pub, Tracer: tp,
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler()
			path := "/api/v1/sales/" + sl.ID + "/items/hot/purchase"
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32)
			cpu0 := server.CPUTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					req := httptest.NewRequest(http.MethodPost, path, nil)
					req.Header.Set("Authorization", "Bearer "+tokens[n%users])
					req.Header.Set("Idempotency-Key", "k-"+strconv.FormatInt(n, 10))
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusAccepted {
						b.Fatalf("answer %d %s, want 202", rec.Code, rec.Body)
					}
				}
			})
			// The checkout's own CPU per purchase: steadier than the wall time, which the Redis and
			// Kafka round trips (and anything else on the machine) dominate.
			b.ReportMetric(float64(server.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
