package server_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

func mustV7(t *testing.T) uuid.UUID {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestPayExpireRace fires payments at orders right at their expiry while three expiry jobs run:
// every order must end PAID (the payment claimed it first; the buyer heard 200) or EXPIRED (the
// expiry won; the buyer heard 410) — never both, never a unit returned twice.
func TestPayExpireRace(t *testing.T) {
	t.Parallel()
	const n = 40
	e := newEnv(t, n, 1)
	ids := make([]uuid.UUID, n)
	users := make([]string, n)
	for i := range n {
		users[i] = "racer-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		ids[i] = e.mustBuy(users[i], "k")
	}
	e.counts(n)
	ctx := context.Background()
	if _, err := e.app.Orders.Pool().Exec(ctx,
		`UPDATE orders SET expires_at = now() + interval '400 milliseconds' WHERE sale_id = $1`, e.sale.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	codes := make([]int, n)
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		delay := 340*time.Millisecond + time.Duration(rng.IntN(120))*time.Millisecond
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(delay)))
			codes[i], _ = e.pay(users[i], ids[i], "tok_ok")
		})
	}
	for range 3 {
		wg.Go(func() {
			for time.Since(start) < time.Second {
				if _, err := e.app.Lifecycle.ExpireOnce(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	paid, expired := 0, 0
	for i, id := range ids {
		switch codes[i] {
		case http.StatusOK:
			e.waitStatus(id, "PAID")
			paid++
		case http.StatusGone:
			if st := e.status(id); st != "EXPIRED" {
				t.Fatalf("order %s: buyer heard 410 but it is %s", id, st)
			}
			expired++
		default:
			t.Fatalf("order %s: pay answered %d, want 200 or 410", id, codes[i])
		}
	}
	rep := e.settled()
	t.Logf("race: %d paid, %d expired", paid, expired)
	if rep.Counts.Paid != int64(paid) || rep.Counts.Expired != int64(expired) || rep.Stock != int64(expired) {
		t.Fatalf("after the race: %+v stock %d; want %d paid, %d expired, stock %d", rep.Counts, rep.Stock, paid, expired, expired)
	}
}

// TestShardedItemAcrossInstances sells 200 units split over 4 shards through 2 server instances
// to 2,000 buyers at once: exactly 200 sold, nobody over the limit, every shard empty.
func TestShardedItemAcrossInstances(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 200, Limit: 1, Shards: 4})
	_, base2 := e.start(true)
	results := make([]map[outcome.Code]int, 2)
	var wg sync.WaitGroup
	for i, base := range []string{e.base, base2} {
		wg.Go(func() {
			res, err := burst(base, e.sale.ID, "shard-buyer-"+string(rune('a'+i))+"-", 1000, 32, nil)
			if err != nil {
				t.Error(err)
			}
			results[i] = outcomes(res)
		})
	}
	wg.Wait()
	reserved, soldOut := 0, 0
	for _, r := range results {
		for code, n := range r {
			switch code {
			case outcome.Reserved:
				reserved += n
			case outcome.SoldOut:
				soldOut += n
			default:
				t.Errorf("%d answers %s", n, code)
			}
		}
	}
	if reserved != 200 || soldOut != 1800 {
		t.Fatalf("%d reserved, %d sold out; want 200 and 1800", reserved, soldOut)
	}
	e.counts(200)
	rep := e.settled()
	if len(rep.Shards) != 4 {
		t.Fatalf("%d shards, want 4", len(rep.Shards))
	}
	for _, sh := range rep.Shards {
		if sh.Stock != 0 || sh.InTransit != 0 {
			t.Fatalf("shard %d: stock %d in transit %d, want 0 0", sh.Shard, sh.Stock, sh.InTransit)
		}
	}
	if rep.Holds != 200 || rep.MaxLivePerUser != 1 {
		t.Fatalf("holds %d, max per user %d; want 200 and 1", rep.Holds, rep.MaxLivePerUser)
	}
}
