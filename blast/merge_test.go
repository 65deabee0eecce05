package blast_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// TestShardedBurstMergesIntoOne fires one burst of 1,000 buyers at 100 units of the bundled
// server on the real services as two shards released at the same instant, writes each shard's
// records file and merges them: the union sells exactly the stock, every buyer appears once,
// and the report says so.
func TestShardedBurstMergesIntoOne(t *testing.T) {
	c := startCheckout(t, 100, 1)
	target := loadgen.Target{SaleID: c.sale.ID, ItemID: "hot"}
	ctx := context.Background()
	limits, err := blast.FetchLimits(ctx, http.DefaultClient, c.base, profile.Default(), []loadgen.Target{target})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Second)
	dir := t.TempDir()
	paths := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			p := plan(c.base, []loadgen.Target{target}, 1000)
			p.At, p.Conns, p.Shard = at, 16, loadgen.Shard{Index: i, Count: 2}
			res, err := loadgen.Run(ctx, p)
			if err != nil {
				errs[i] = err
				return
			}
			var buf bytes.Buffer
			if err := loadgen.WriteRecords(&buf, loadgen.HeaderOf(p, res, limits), res.Records); err != nil {
				errs[i] = err
				return
			}
			paths[i] = filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
			errs[i] = os.WriteFile(paths[i], buf.Bytes(), 0o644)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, recs, err := blast.Merge(paths[1], paths[0]) // any order
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_ = s.Render(&out)
	if s.Sold != 100 || s.Requests != 1000 || s.Buyers != 1000 || s.Conns != 32 || !finding.OK(s.Verdicts, false) || len(s.Verdicts) != 3 {
		t.Fatalf("merged report:\n%s", out.String())
	}
	seen := map[int]bool{}
	for _, r := range recs {
		if seen[r.Buyer] || !strings.HasPrefix(r.Conn, fmt.Sprint(r.Buyer%2, "/")) {
			t.Fatalf("buyer %d twice or on another shard's connection %q", r.Buyer, r.Conn)
		}
		seen[r.Buyer] = true
	}
	if f := s.Fairness; len(f) != 1 || f[0].Clicks != 1000 || f[0].Won != 100 || f[0].FirstKWon > 100 {
		t.Errorf("fairness %+v", f)
	}
	var page bytes.Buffer
	if err := blast.WriteHTML(&page, s, recs); err != nil || strings.Count(page.String(), "<circle ") != 1000 {
		t.Errorf("html report: %v, %d dots", err, strings.Count(page.String(), "<circle "))
	}
}
