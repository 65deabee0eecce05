package warroom

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// Endpoints say where the checkout's parts live. An empty endpoint leaves its panels "not
// available" (a target that has no such part), distinct from a part that is there but down.
type Endpoints struct {
	Sale        string
	RedisURL    string
	PostgresURL string
	Kafka       kafkaconn.Conn
	// OrdersTopic, DeadLetterTopic and ConsumerGroup override the profile's kafka names.
	OrdersTopic     string
	DeadLetterTopic string
	ConsumerGroup   string
	// Servers are checkout base URLs whose metrics (the profile's http.metrics) feed traffic,
	// admission and payment; the first one's admin API (http.admin), with AdminToken, feeds the
	// control panel and takes operator actions.
	Servers    []string
	AdminToken string
	// Profile is the target profile; nil is the bundled server's. Every panel is fed from what it
	// declares; a deep profile (fsctl serve) adds what only the bundled server keeps.
	Profile *profile.Profile
	// Items are the items to watch; empty: the profile's sql.items.
	Items []string
}

// Open builds the sources of the endpoints without touching the network (every connection is made
// on first use, so a part that is down shows as down rather than stopping the dashboard). The
// returned close function releases the connections.
func Open(e Endpoints) (Sources, func(), error) {
	p := profile.OrBundled(e.Profile)
	src := Sources{Sale: e.Sale, Profile: p.Name, Absent: map[string]string{}}
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	if err := openStores(&src, &closers, e, p); err != nil {
		closeAll()
		return Sources{}, nil, err
	}
	client := newHTTPClient()
	closers = append(closers, client.CloseIdleConnections)
	openServers(&src, e, p, client)
	openPipeline(&src, &closers, e, p)
	return src, closeAll, nil
}

// openStores builds the items source from the profile's key templates and queries and the orders
// source from its queries; the item list comes from PostgreSQL, so the items need both.
func openStores(src *Sources, closers *[]func(), e Endpoints, p *profile.Profile) error {
	if e.PostgresURL == "" {
		src.Absent["orders"], src.Absent["items"] = noPostgres, noPostgres+" (the items and quantities come from sql.items and sql.item)"
	}
	var rdb redis.UniversalClient
	if e.RedisURL == "" {
		src.Absent["items"] = noRedis
	} else {
		var err error
		if rdb, err = newRedis(e.RedisURL); err != nil {
			return err
		}
		*closers = append(*closers, func() { _ = rdb.Close() })
	}
	if e.PostgresURL == "" {
		return nil
	}
	// pgxpool connects on first use, so a database that is down shows as down, not as a crash.
	pool, err := pgxpool.New(context.Background(), e.PostgresURL)
	if err != nil {
		return fmt.Errorf("--postgres-url: %w", err)
	}
	*closers = append(*closers, pool.Close)
	items := &itemList{sale: e.Sale, given: e.Items, db: profile.NewDB(p, pool)}
	ord := &postgresOrders{items: items}
	src.Orders = ord
	var inv *redisInventory
	if rdb != nil {
		inv = &redisInventory{items: items, keys: profile.NewStocks(p, rdb)}
		src.Inventory = inv
	}
	if p.Bundled() { // fsctl serve keeps records no profile declares
		ord.statuses = pool
		if inv != nil {
			inv.transit = stock.New(rdb)
		}
	}
	return nil
}

// openServers builds the servers' panels from the endpoints the profile declares: traffic,
// admission and payment from http.metrics, the control panel from http.admin.
func openServers(src *Sources, e Endpoints, p *profile.Profile, client *http.Client) {
	switch {
	case len(e.Servers) == 0:
		noServers(src.Absent, "no checkout server given")
		return
	case p.HTTP.Metrics == "":
		for _, panel := range []string{"traffic", "admission", "payment"} {
			src.Absent[panel] = "the profile declares no metrics endpoint (http.metrics)"
		}
	default:
		sc := NewScraper(e.Servers, p.HTTP.Metrics, e.Sale, client)
		src.Traffic, src.Admission, src.Payment = sc, sc, sc
	}
	switch {
	case p.HTTP.Admin == "":
		src.Absent["control"] = "the profile declares no admin API (http.admin)"
	case e.AdminToken == "":
		src.Absent["control"] = "no admin token given"
	default:
		// An undeclared http.salePage leaves the paused flag unread.
		src.Control = NewAdminAPI(e.Servers[0], p.HTTP.Admin, p.Endpoint("", p.HTTP.SalePage, e.Sale), e.AdminToken, e.Sale, client)
	}
}

// openPipeline reads the order log the profile names (flags override its names); without a topic
// and a group there is nothing to measure lag against.
func openPipeline(src *Sources, closers *[]func(), e Endpoints, p *profile.Profile) {
	topic, dlq, group := cmp.Or(e.OrdersTopic, p.Kafka.Topic), cmp.Or(e.DeadLetterTopic, p.Kafka.DeadLetter), cmp.Or(e.ConsumerGroup, p.Kafka.Group)
	switch {
	case len(e.Kafka.Brokers) == 0:
		src.Absent["pipeline"] = noKafka
	case topic == "" || group == "":
		src.Absent["pipeline"] = "the profile declares no kafka topic and group (kafka.topic, kafka.group)"
	default:
		kp, err := NewKafkaPipeline(e.Kafka, topic, dlq, group)
		if err != nil {
			src.Absent["pipeline"] = err.Error()
			return
		}
		src.Pipeline = kp
		*closers = append(*closers, kp.Close)
	}
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
func newRedis(url string) (redis.UniversalClient, error) {
	c, err := redisconn.Open(url, redisconn.Tune{MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond})
	if err != nil {
		return nil, fmt.Errorf("--redis-url: %w", err)
	}
	return c, nil
}
