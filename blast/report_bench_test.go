package blast

import (
	"fmt"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// burstRecords is what a 50,000-buyer burst for 10,000 units leaves for its report: one click a
// buyer on 1,000 connections, the first 10,000 written RESERVED with an order id each, the rest
// SOLD_OUT.
func burstRecords(buyers, units int) []loadgen.Record {
	at := time.Now()
	target := loadgen.Target{SaleID: "bench", ItemID: "item"}
	recs := make([]loadgen.Record, buyers)
	for i := range recs {
		r := &recs[i]
		r.Buyer, r.User, r.Target, r.Key, r.Click, r.Attempt = i, fmt.Sprintf("buyer-%07d", i), target, fmt.Sprintf("buyer-%07d-1796500000-c1", i), 1, 1
		r.Intended = at
		r.Started = at.Add(time.Duration(i) * 20 * time.Nanosecond)
		r.Written = r.Started.Add(time.Microsecond)
		r.FirstByte = r.Written.Add(time.Duration(i%977) * time.Microsecond)
		r.Done = r.FirstByte
		r.Method, r.URL, r.Proto, r.Conn = "POST", "http://127.0.0.1:8080/api/v1/purchase", "HTTP/1.1", fmt.Sprintf("127.0.0.1:%d", 20000+i%1000)
		if i < units {
			r.Status, r.Outcome, r.OrderID = 202, outcome.Reserved, fmt.Sprintf("0193a5c2-0000-7000-8000-%012d", i)
		} else {
			r.Status, r.Outcome = 409, outcome.SoldOut
		}
	}
	return recs
}

// BenchmarkBurstReport is what the generator spends after a 50,000-buyer burst on its report:
// the checks of what buyers were told, the fairness ranking and the summary, each on its own
// (fsctl blast pays all three, on the CPU the bars count as the generator's).
func BenchmarkBurstReport(b *testing.B) {
	recs := burstRecords(50_000, 10_000)
	limits := map[loadgen.Target]loadgen.ItemLimit{recs[0].Target: {Stock: 10_000, PerUser: 1}}
	b.Run("step=check-responses", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if f := CheckResponses(recs, limits); len(f) != 3 || f[0].Status != finding.Pass || f[1].Status != finding.Pass || f[2].Status != finding.Pass {
				b.Fatalf("findings %+v", f)
			}
		}
	})
	b.Run("step=fairness", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rows := Fairness(recs); len(rows) != 1 || rows[0].Won != 10_000 {
				b.Fatalf("fairness %+v", rows)
			}
		}
	})
	res := &loadgen.Result{At: recs[0].Intended, Buyers: len(recs), Records: recs}
	b.Run("step=summarize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s := Summarize(res, nil); s.Sold != 10_000 {
				b.Fatalf("sold %d", s.Sold)
			}
		}
	})
}
