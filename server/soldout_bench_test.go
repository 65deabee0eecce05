package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/server"
)

// BenchmarkSoldOutPurchase measures the purchase path of an item that is sold out — the path
// almost every buyer of a flash sale takes — on a hot item of 4 stock shards, with the instance's
// local sold-out flag off (the reserve script, and a borrowing round over the other shards before
// the final SOLD_OUT), in verify mode (the script on the buyer's home shard alone) and in trust mode
// (no Redis call). Requests go straight to the handler, so the numbers are the server's own cost
// plus its Redis round trips (batched, as in the server); every request is a new key, from 4,096
// buyers whose tokens the verifier has seen before.
func BenchmarkSoldOutPurchase(b *testing.B) {
	st, db, sl := stores(b, sale.Sale{ID: testenv.ID(b, "soldout"), OpensAt: time.Now().Add(-time.Minute), Items: []sale.Item{{ID: "hot", Quantity: 0, Shards: 4}}})
	verifier, err := auth.NewVerifier(testSecret, nil)
	if err != nil {
		b.Fatal(err)
	}
	const users = 4096
	tokens := make([]string, users)
	for i := range tokens {
		if tokens[i], err = auth.Mint(testSecret, "bench-"+strconv.Itoa(i), time.Now(), time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	path := "/api/v1/sales/" + sl.ID + "/items/hot/purchase"
	for _, mode := range []server.SoldOutMode{server.SoldOutOff, server.SoldOutVerify, server.SoldOutTrust} {
		b.Run("flag="+string(mode), func(b *testing.B) {
			cfg := server.DefaultConfig()
			cfg.SoldOut = mode
			cfg.ReadModelTTL = time.Minute
			srv := server.New(cfg, server.Deps{Auth: verifier, Stock: st, Orders: db,
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			h := srv.Handler()
			// The first answer sets the flag (when on); it is part of setup, not of the measure.
			warm := httptest.NewRequest(http.MethodPost, path, nil)
			warm.Header.Set("Authorization", "Bearer "+tokens[0])
			warm.Header.Set("Idempotency-Key", "warm-"+string(mode))
			h.ServeHTTP(httptest.NewRecorder(), warm)
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32) // many buyers in flight, as in a burst (32 × GOMAXPROCS goroutines)
			b.ResetTimer()
			cpu0 := server.CPUTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					req := httptest.NewRequest(http.MethodPost, path, nil)
					req.Header.Set("Authorization", "Bearer "+tokens[n%users])
					req.Header.Set("Idempotency-Key", string(mode)+"-"+strconv.FormatInt(n, 10))
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusGone {
						b.Fatalf("answer %d %s, want 410", rec.Code, rec.Body)
					}
				}
			})
			// CPU per purchase (this process: the handler, its Redis client, and the test's requests,
			// the same in every run) holds still on a busy box where ns/op does not.
			b.ReportMetric(float64(server.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
