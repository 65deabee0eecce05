package warroom

import (
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/stock"
)

// Endpoints say where the bundled checkout's parts live. An empty endpoint leaves its panels "not
// available" (a target that has no such part), distinct from a part that is there but down.
type Endpoints struct {
	Sale        string
	RedisURL    string
	PostgresURL string
	Brokers     []string
	// OrdersTopic, DeadLetterTopic and ConsumerGroup default to the bundled server's.
	OrdersTopic     string
	DeadLetterTopic string
	ConsumerGroup   string
	// Servers are checkout base URLs whose /metrics feed traffic, admission and payment; the first
	// one's /admin/v1 API, with AdminToken, feeds the control panel and takes operator actions.
	Servers    []string
	AdminToken string
}

// Open builds the sources of the endpoints without touching the network (every connection is made
// on first use, so a part that is down shows as down rather than stopping the dashboard). The
// returned close function releases the connections.
func Open(e Endpoints) (Sources, func(), error) {
	src := Sources{Sale: e.Sale}
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}}
	var pg *PostgresOrders
	if e.PostgresURL != "" {
		pg = NewPostgresOrders(e.PostgresURL, e.Sale, nil)
		src.Orders = pg
		closers = append(closers, pg.Close)
	}
	if e.RedisURL != "" {
		opt, err := redis.ParseURL(e.RedisURL)
		if err != nil {
			return Sources{}, nil, fmt.Errorf("--redis-url: %w", err)
		}
		// One attempt per probe: the probe's own timeout, not go-redis's retries, bounds a read.
		opt.MaxRetries, opt.DialerRetries, opt.DialTimeout = -1, 1, 500*time.Millisecond
		rdb := redis.NewClient(opt)
		closers = append(closers, func() { _ = rdb.Close() })
		if pg != nil { // the item list comes from PostgreSQL, the sale's source of truth
			src.Inventory = &RedisInventory{Stock: stock.New(rdb), Sale: pg, ID: e.Sale}
		}
	}
	if len(e.Servers) > 0 {
		sc := NewScraper(e.Servers, e.Sale, client)
		src.Traffic, src.Admission, src.Payment = sc, sc, sc
		if e.AdminToken != "" {
			src.Control = NewAdminAPI(e.Servers[0], e.AdminToken, e.Sale, client)
		}
	}
	if len(e.Brokers) > 0 {
		topic, dlq, group := events.LogNames(e.OrdersTopic, e.DeadLetterTopic, e.ConsumerGroup)
		src.Pipeline = NewKafkaPipeline(e.Brokers, topic, dlq, group)
	}
	closers = append(closers, client.CloseIdleConnections)
	return src, closeAll, nil
}
