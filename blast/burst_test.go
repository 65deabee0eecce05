package blast_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

func plan(base string, targets []loadgen.Target, buyers int) loadgen.Plan {
	return loadgen.Plan{BaseURL: base, Targets: targets, Buyers: buyers, UserPrefix: "buyer-", Secret: testSecret,
		Clicks: 1, Conns: 64, Timeout: 30 * time.Second, At: time.Now().Add(500 * time.Millisecond)}
}

// TestBurstSellsExactlyTheStock releases 5,000 buyers at 500 units of the bundled server on the
// real services (about 5 s under -race on 2 cores): exactly 500 reservations, the rest sold out,
// every invariant holds, and the vegeta results file agrees with blast's counts.
func TestBurstSellsExactlyTheStock(t *testing.T) {
	c := startCheckout(t, 500, 1)
	target := loadgen.Target{SaleID: c.sale.ID, ItemID: "hot"}
	ctx := context.Background()
	limits, err := blast.FetchLimits(ctx, http.DefaultClient, c.base, profile.Default(), []loadgen.Target{target})
	if err != nil {
		t.Fatal(err)
	}
	if limits[target] != (loadgen.ItemLimit{Stock: 500, PerUser: 1}) {
		t.Fatalf("limits %+v", limits)
	}
	var progress []int
	p := plan(c.base, []loadgen.Target{target}, 5000)
	p.Progress = func(done, _ int) { progress = append(progress, done) }
	res, err := loadgen.Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(progress) != 10 || progress[9] != 5000 {
		t.Errorf("progress reports %v, want every 10%%", progress)
	}
	counts := map[outcome.Code]int{}
	for _, r := range res.Records {
		counts[r.Outcome]++
		if r.Written.IsZero() || r.Written.Before(r.Intended) || r.Done.Before(r.Written) {
			t.Fatalf("record times out of order: %+v", r)
		}
	}
	if counts[outcome.Reserved] != 500 || counts[outcome.SoldOut] != 4500 || len(res.Records) != 5000 {
		t.Fatalf("outcomes %v of %d requests, want 500 RESERVED and 4500 SOLD_OUT", counts, len(res.Records))
	}
	verdicts := blast.CheckResponses(res.Records, limits)
	server, err := blast.CheckState(ctx, bundled(t, c.postgresURL), c.sale.ID, res.Records, limits, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	verdicts = append(verdicts, server...)
	sum := blast.Summarize(res, verdicts)
	if !finding.OK(verdicts, false) || sum.Check(blast.Thresholds{ExpectSold: 500}) {
		var out bytes.Buffer
		_ = sum.Render(&out)
		t.Fatalf("a healthy sale failed its checks:\n%s", out.String())
	}
	if sum.ConnsUsed == 0 || sum.ConnsUsed > p.Conns || sum.Protocol != "HTTP/1.1" || sum.SoldOutMs == nil {
		t.Errorf("summary %+v", sum)
	}

	var file bytes.Buffer
	if err := loadgen.WriteResults(&file, res.Records); err != nil {
		t.Fatal(err)
	}
	dec := vegeta.NewDecoder(&file)
	var m vegeta.Metrics
	attacks := map[string]int{}
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if !r.Timestamp.Equal(p.At) {
			t.Fatalf("vegeta timestamp %v, want the intended %v", r.Timestamp, p.At)
		}
		attacks[r.Attack]++
		m.Add(&r)
	}
	m.Close()
	if m.Requests != 5000 || m.StatusCodes["202"] != 500 || m.StatusCodes["410"] != 4500 ||
		attacks["RESERVED"] != 500 || attacks["SOLD_OUT"] != 4500 {
		t.Errorf("vegeta sees %d requests, codes %v, attacks %v", m.Requests, m.StatusCodes, attacks)
	}
	// blast's HDR histogram keeps 3 significant digits: the two agree to 0.1%.
	if got, want := float64(m.Latencies.Max)/float64(time.Millisecond), sum.Latency.Max; got < want*0.998 || got > want*1.002 {
		t.Errorf("vegeta max latency %.3fms, blast %.3fms", got, want)
	}
}

// TestBurstCatchesAnOversell points blast at a server whose reserve turns SOLD_OUT into a
// reservation and records no order: the responses show more reservations than stock, and the
// server's state shows reservations that never reached PostgreSQL.
func TestBurstCatchesAnOversell(t *testing.T) {
	base, sl, pgURL := startOverseller(t, 20, 1)
	target := loadgen.Target{SaleID: sl.ID, ItemID: "hot"}
	ctx := context.Background()
	limits, err := blast.FetchLimits(ctx, http.DefaultClient, base, profile.Default(), []loadgen.Target{target})
	if err != nil {
		t.Fatal(err)
	}
	res, err := loadgen.Run(ctx, plan(base, []loadgen.Target{target}, 200))
	if err != nil {
		t.Fatal(err)
	}
	vs := blast.CheckResponses(res.Records, limits)
	if finding.OK(vs, false) || vs[0].Passed() {
		t.Fatalf("the oversell went unnoticed: %+v", vs)
	}
	if want := "200 reservations for 20 units"; len(vs[0].Problems) != 1 || !bytes.Contains([]byte(vs[0].Problems[0]), []byte(want)) {
		t.Errorf("problems %v, want %q", vs[0].Problems, want)
	}
	state, err := blast.CheckState(ctx, bundled(t, pgURL), sl.ID, res.Records, limits, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// No order reached PostgreSQL, and Redis holds 20 units for orders PostgreSQL never heard of.
	if len(state) != 3 || state[0].Passed() || !state[1].Passed() || state[2].Passed() {
		t.Errorf("the server's state looks fine to blast: %+v", state)
	}
}
