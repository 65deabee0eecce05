package warroom

import (
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/profile"
	"github.com/fsctl/fsctl/stock"
)

// Endpoints say where the checkout's parts live. An empty endpoint leaves its panels "not
// available" (a target that has no such part), distinct from a part that is there but down.
type Endpoints struct {
	Sale        string
	RedisURL    string
	PostgresURL string
	Brokers     []string
	// OrdersTopic, DeadLetterTopic and ConsumerGroup default to the bundled server's (to the
	// profile's kafka names with a non-deep profile).
	OrdersTopic     string
	DeadLetterTopic string
	ConsumerGroup   string
	// Servers are checkout base URLs whose /metrics feed traffic, admission and payment; the first
	// one's /admin/v1 API, with AdminToken, feeds the control panel and takes operator actions.
	Servers    []string
	AdminToken string
	// Profile is the target profile; nil is the bundled server's. A non-deep profile (a foreign
	// checkout) feeds only the panels its declarations can feed (see openProfile).
	Profile *profile.Profile
	// Items are the items to watch on a non-deep profile's target; empty: its sql.items.
	Items []string
}

// Open builds the sources of the endpoints without touching the network (every connection is made
// on first use, so a part that is down shows as down rather than stopping the dashboard). The
// returned close function releases the connections.
func Open(e Endpoints) (Sources, func(), error) {
	p := e.Profile
	if p == nil {
		p = profile.Default()
	}
	if !p.IsDeep() {
		return openProfile(e, p)
	}
	src := Sources{Sale: e.Sale, Profile: p.Name, Absent: map[string]string{}}
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	client := newHTTPClient()
	var pg *PostgresOrders
	if e.PostgresURL != "" {
		pg = NewPostgresOrders(e.PostgresURL, e.Sale, nil)
		src.Orders = pg
		closers = append(closers, pg.Close)
	} else {
		src.Absent["orders"], src.Absent["items"] = noPostgres, noPostgres+" (the item list comes from it)"
	}
	if e.RedisURL != "" {
		rdb, err := newRedis(e.RedisURL)
		if err != nil {
			return Sources{}, nil, err
		}
		closers = append(closers, func() { _ = rdb.Close() })
		if pg != nil { // the item list comes from PostgreSQL, the sale's source of truth
			src.Inventory = &RedisInventory{Stock: stock.New(rdb), Sale: pg, ID: e.Sale}
		}
	} else {
		src.Absent["items"] = noRedis
	}
	if len(e.Servers) > 0 {
		sc := NewScraper(e.Servers, e.Sale, client)
		src.Traffic, src.Admission, src.Payment = sc, sc, sc
		if e.AdminToken != "" {
			src.Control = NewAdminAPI(e.Servers[0], e.AdminToken, e.Sale, client)
		} else {
			src.Absent["control"] = "no admin token given"
		}
	} else {
		noServers(src.Absent, "no checkout server given")
	}
	if len(e.Brokers) > 0 {
		topic, dlq, group := events.LogNames(e.OrdersTopic, e.DeadLetterTopic, e.ConsumerGroup)
		kp := NewKafkaPipeline(e.Brokers, topic, dlq, group)
		src.Pipeline = kp
		closers = append(closers, kp.Close)
	} else {
		src.Absent["pipeline"] = noKafka
	}
	closers = append(closers, client.CloseIdleConnections)
	return src, closeAll, nil
}

// The reasons of a part that was not given.
const (
	noPostgres = "no PostgreSQL URL given"
	noRedis    = "no Redis URL given"
	noKafka    = "no Kafka brokers given"
)

// noServers marks every panel the servers feed as not available, for reason.
func noServers(absent map[string]string, reason string) {
	for _, panel := range []string{"traffic", "admission", "payment", "control"} {
		absent[panel] = reason
	}
}

func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}}
}

// newRedis returns a client that makes one attempt per probe: the probe's own timeout, not
// go-redis's retries, bounds a read.
func newRedis(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("--redis-url: %w", err)
	}
	opt.MaxRetries, opt.DialerRetries, opt.DialTimeout = -1, 1, 500*time.Millisecond
	return redis.NewClient(opt), nil
}
