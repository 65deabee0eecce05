package preflight_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/preflight"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// target is a running checkout with its sale, and the preflight configuration that points at it.
type target struct {
	c   *checkouttest.Checkout
	cfg preflight.Config
}

func newTarget(t *testing.T, o checkouttest.Options) *target {
	t.Helper()
	c := checkouttest.Start(t, o)
	return &target{c: c, cfg: preflight.Config{
		SaleID: c.Sale.ID, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: c.Brokers}, OrdersTopic: c.OrdersTopic, DeadLetterTopic: c.DeadLetterTopic,
		ConsumerGroup: c.ConsumerGroup, SwitchesKey: c.SwitchesKey, Servers: []string{c.Base},
		Timeout: 3 * time.Second, // generous: the race detector on 2 cores, not a healthy stack's speed
	}}
}

func (tg *target) run(t *testing.T) preflight.Report {
	t.Helper()
	return run(t, tg.cfg)
}

func run(t *testing.T, cfg preflight.Config) preflight.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := preflight.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("preflight: %v", err)
	}
	return rep
}

// result finds the one result whose check starts with prefix.
func result(t *testing.T, rep preflight.Report, prefix string) finding.Finding {
	t.Helper()
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Check, prefix) {
			return r
		}
	}
	t.Fatalf("no check %q in %+v", prefix, rep.Results)
	return finding.Finding{}
}

// failures lists the failed checks, for messages.
func failures(rep preflight.Report) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Status == finding.Fail {
			out = append(out, r.Check+": "+r.Detail)
		}
	}
	return out
}

// expect asserts a check's status and that a failure says how to fix it.
func expect(t *testing.T, rep preflight.Report, check string, want finding.Status, detail string) finding.Finding {
	t.Helper()
	r := result(t, rep, check)
	if r.Status != want || !strings.Contains(r.Detail, detail) {
		t.Fatalf("%s: got %s %q, want %s with %q", check, r.Status, r.Detail, want, detail)
	}
	if want == finding.Fail && r.Fix == "" {
		t.Fatalf("%s failed without saying how to fix it: %+v", check, r)
	}
	return r
}
