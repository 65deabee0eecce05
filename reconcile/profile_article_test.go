package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/reconcile"
)

// TestRunProfileArticleShop reconciles the second, foreign target through its shipped profile:
// clean after a burst, every planted drift found, and repaired by the fixes the profile declares.
func TestRunProfileArticleShop(t *testing.T) {
	s := articletest.Start(t, 40)
	item := s.Items[0]
	var mu sync.Mutex
	var winners []string
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			user := fmt.Sprintf("user-%d", i)
			if code, _ := s.Buy(user, item); code == 202 {
				mu.Lock()
				winners = append(winners, user)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(winners) != 40 {
		t.Fatalf("%d of 60 buyers reserved 40 units", len(winners))
	}
	s.WaitOrders(item, 40)
	run := func(fix bool) *reconcile.Report {
		t.Helper()
		rep, err := runProfile(t, s.Profile, s.RedisURL, s.PostgresURL, s.Sale, s.Brokers, fix)
		if err != nil {
			t.Fatalf("reconcile the article shop: %v", err)
		}
		return rep
	}
	if rep := run(false); !rep.OK() || rep.Items[0].Stock != 0 || rep.Items[0].Counts.Sold != 40 || rep.Kafka == nil {
		t.Fatalf("after the burst: want clean, stock 0, sold 40, the log read: %+v", rep)
	}

	keys := s.Profile.Keys(s.Sale, item, 1)[0]
	rdb := testenv.Redis(t)
	ctx := context.Background()
	if err := rdb.Incr(ctx, keys.Stock).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.SRem(ctx, keys.Buyers, winners[0]).Err(); err != nil {
		t.Fatal(err)
	}
	execArticle(t, s.PostgresURL, `UPDATE flash_sale_item SET sold = sold - 1 WHERE id = `+item+`::bigint`)

	rep := run(false)
	found := kinds(rep)
	for kind, want := range map[string]string{
		reconcile.KindUnits:             "1 unit(s) doubled",
		reconcile.KindSoldCounter:       "39, live orders 40",
		reconcile.KindOrderWithoutBuyer: winners[0],
	} {
		if f, ok := found[kind]; !ok || !strings.Contains(f.Detail, want) {
			t.Errorf("%s: want %q, got %+v", kind, want, f)
		}
	}
	if len(found) != 3 {
		t.Fatalf("want exactly the 3 planted drifts: %+v", rep)
	}
	if rep = run(true); len(rep.Actions) != 3 || !rep.OK() {
		t.Fatalf("--fix with the article's declared fixes: %+v", rep)
	}
	if rep = run(false); !rep.OK() {
		t.Fatalf("after the fix: %+v", rep)
	}
	if ok, _ := rdb.SIsMember(ctx, keys.Buyers, winners[0]).Result(); !ok {
		t.Fatalf("%s not back in %s", winners[0], keys.Buyers)
	}
}

// execArticle runs one statement on the shop's database, as an operator's slip or a bug would.
func execArticle(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
