package preflight_test

import (
	"context"
	"testing"
	"time"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/preflight"
)

// TestArticleShop is preflight against the second target, through its shipped profile: ready,
// with skips for what only fsctl serve has; then a Redis counter off by two is NOT READY naming
// the item.
func TestArticleShop(t *testing.T) {
	s := articletest.Start(t, 5, 3)
	hot, other := s.Items[0], s.Items[1]
	if code, body := s.Buy("buyer-1", hot); code != 202 {
		t.Fatalf("purchase: %d %s", code, body)
	}
	s.WaitOrders(hot, 1)
	cfg := preflight.Config{SaleID: s.Sale, Profile: s.Profile, RedisURL: s.RedisURL, PostgresURL: s.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: s.Brokers}, Servers: []string{s.Base}, Timeout: 3 * time.Second}
	rep := run(t, cfg)
	// The shop's consumer commits its offset after PostgreSQL has the order, so the group may
	// still show the order as lag for a moment: a warning, until it catches up.
	for deadline := time.Now().Add(15 * time.Second); result(t, rep, "consumer group").Status == finding.Warn && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		rep = run(t, cfg)
	}
	if !rep.Ready(false) || rep.Profile != "spring-article" {
		t.Fatalf("profile %q, failures %v", rep.Profile, failures(rep))
	}
	expectField(t, rep, "purchase", finding.Pass, "POST /api/flash-sales/items/")
	expectField(t, rep, "token", finding.Pass, "rs256 token for fsctl-profile-check")
	expectField(t, rep, "sql.item", finding.Pass, "item "+hot+": quantity 5, sold 1")
	expectField(t, rep, "sql.live", finding.Pass, "item "+hot+": 1 live orders")
	expectField(t, rep, "sql.paid", finding.Pass, "item "+hot+": 0 paid orders")
	expectField(t, rep, "sql.userOrders", finding.Pass, "item "+hot+": 0 orders of fsctl-profile-check")
	expectField(t, rep, "sql.liveBuyers", finding.Pass, "item "+hot+": 1 live buyers")
	expect(t, rep, "stock "+hot, finding.Pass, "redis 4 on 1 shard(s), expected 4 = quantity 5 − live orders 1; buyers 1")
	expect(t, rep, "stock "+other, finding.Pass, "redis 3 on 1 shard(s), expected 3")
	expect(t, rep, "sale", finding.Skip, "the profile has no sale definition")
	expect(t, rep, "admission rate", finding.Skip, "not available")
	expect(t, rep, "kill switches", finding.Skip, "not available")
	expect(t, rep, "ready "+s.Base, finding.Pass, "GET /actuator/health answered 200")
	expect(t, rep, "consumer group", finding.Pass, s.Group)

	key := s.Profile.Keys(s.Sale, other, 1)[0].Stock
	if err := testenv.Redis(t).IncrBy(context.Background(), key, 2).Err(); err != nil {
		t.Fatal(err)
	}
	rep = run(t, cfg)
	expect(t, rep, "stock "+other, finding.Fail, "redis holds 5, expected 3 (off by +2)")
	if rep.Ready(false) {
		t.Fatal("a drifted counter is ready")
	}
}
