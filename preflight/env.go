package preflight

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/reach"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// env is what one run connected to. A nil client means the service was unreachable; the checks
// that need it then report one skip instead of repeating the connection error.
type env struct {
	cfg     Config
	rdb     redis.UniversalClient
	roomRdb redis.UniversalClient
	db      *orders.Store
	kafka   *kafka.Client
	// closeKafka closes the Kafka client's idle connections, with the env.
	closeKafka func()
	meta       *kafka.MetadataResponse
	// prof is the target's profile; pdb runs its queries (nil when PostgreSQL is unreachable) and
	// target reads both stores through it (nil when PostgreSQL or Redis is).
	prof   *profile.Profile
	pdb    *profile.DB
	target *profile.Target
	// bundled is what only fsctl serve offers beyond its profile; nil for any other target.
	bundled *bundled
	// fix words the fixes that depend on who repairs the target.
	fix fixes
	// file is the parsed --file (nil when none or when it does not parse).
	file *sale.Sale
	// items are the items the profile and stock checks read (Config.Items, else sql.items);
	// listed is what sql.items returned and itemsErr why it failed.
	items, listed  []string
	itemsErr       error
	connectResults []finding.Finding
	mu             sync.Mutex
}

func (e *env) add(r finding.Finding) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.connectResults = append(e.connectResults, r)
}

func (e *env) close() {
	for _, c := range []redis.UniversalClient{e.rdb, e.roomRdb} {
		if c != nil {
			_ = c.Close()
		}
	}
	if e.db != nil {
		e.db.Close()
	}
	if e.closeKafka != nil {
		e.closeKafka()
	}
}

// connect reaches every service in parallel, each within the probe timeout.
func connect(ctx context.Context, cfg Config) *env {
	e := &env{cfg: cfg, prof: cfg.Profile, fix: profileFixes}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { e.rdb = e.dialRedis(ctx, "redis", cfg.RedisURL, "--redis-url / FSCTL_REDIS_URL") })
	if cfg.RoomRedisURL != "" && cfg.RoomRedisURL != cfg.RedisURL {
		wg.Go(func() {
			e.roomRdb = e.dialRedis(ctx, "room redis", cfg.RoomRedisURL, "--room-redis-url / FSCTL_ROOM_REDIS_URL")
		})
	}
	wg.Go(func() { e.openPostgres(ctx) })
	wg.Go(func() { e.dialKafka(ctx) })
	wg.Wait()
	if e.rdb != nil && e.pdb != nil {
		e.target = &profile.Target{P: e.prof, DB: e.pdb, Stocks: profile.NewStocks(e.prof, e.rdb)}
	}
	e.loadFile()
	if offersBundled(e.prof) {
		e.bundled, e.fix = openBundled(ctx, e.db, cfg.SaleID), serveFixes
	}
	return e
}

// roomClient is the Redis of the waiting rooms.
func (e *env) roomClient() redis.UniversalClient {
	if e.cfg.RoomRedisURL != "" && e.cfg.RoomRedisURL != e.cfg.RedisURL {
		return e.roomRdb
	}
	return e.rdb
}

func (e *env) dialRedis(ctx context.Context, name, url, flag string) redis.UniversalClient {
	t := e.cfg.Timeout
	c, err := redisconn.Open(url, redisconn.Tune{DialTimeout: t, ReadTimeout: t, WriteTimeout: t, MaxRetries: -1})
	if err != nil {
		e.add(finding.Finding{Group: "redis", Check: name + " reachable", Status: finding.Fail,
			Detail: err.Error(), Fix: "set " + flag + " to " + redisconn.Forms})
		return nil
	}
	if err := redisconn.Check(ctx, c); err != nil {
		_ = c.Close()
		e.add(finding.Finding{Group: "redis", Check: name + " reachable", Status: finding.Fail,
			Detail: err.Error(), Fix: reachFix(err, flag)})
		return nil
	}
	return c
}

func (e *env) openPostgres(ctx context.Context) {
	db, err := orders.Open(ctx, e.cfg.PostgresURL)
	if err != nil {
		e.add(finding.Finding{Group: "schema", Check: "postgres reachable", Status: finding.Fail, Detail: err.Error(),
			Fix: reachFix(err, "--postgres-url / FSCTL_POSTGRES_URL")})
		return
	}
	e.db = db
	e.pdb = profile.NewDB(e.prof, db.Pool())
	e.listItems(ctx)
}

func (e *env) dialKafka(ctx context.Context) {
	if len(e.cfg.Kafka.Brokers) == 0 {
		e.add(finding.Finding{Group: "kafka", Check: "kafka reachable", Status: finding.Fail, Detail: "no brokers given",
			Fix: "set --kafka-brokers / FSCTL_KAFKA_BROKERS"})
		return
	}
	c, closeIdle, err := kafkaconn.NewClient(e.cfg.Kafka, e.cfg.Timeout)
	if err != nil {
		e.add(finding.Finding{Group: "kafka", Check: "kafka reachable", Status: finding.Fail, Detail: err.Error(),
			Fix: "fix the Kafka connection's form (--kafka-* / FSCTL_KAFKA_*)"})
		return
	}
	e.closeKafka = closeIdle
	var topics []string
	for _, t := range []string{e.cfg.OrdersTopic, e.cfg.DeadLetterTopic} {
		if t != "" {
			topics = append(topics, t)
		}
	}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		err := e.cfg.Kafka.Unreachable(err)
		e.add(finding.Finding{Group: "kafka", Check: "kafka reachable", Status: finding.Fail,
			Detail: err.Error(), Fix: reachFix(err, "--kafka-brokers / FSCTL_KAFKA_BROKERS")})
		return
	}
	e.kafka, e.meta = c, meta
}

// reachFix is the fix for a service that did not answer at the address flag sets: the local
// stack's start for its own addresses only, else a check of the address (reach.Hint).
func reachFix(err error, flag string) string {
	if ke, ok := errors.AsType[*kafkaconn.Error](err); ok {
		return ke.Fix
	}
	if h := reach.Hint(err, stack.DefaultAddrs()); h != "" {
		return h + " (" + flag + ")"
	}
	return "check " + flag
}

// listItems runs sql.items once for every group that needs the items.
func (e *env) listItems(ctx context.Context) {
	e.listed, e.itemsErr = e.pdb.Items(ctx, e.cfg.SaleID)
	if e.itemsErr == nil && len(e.listed) == 0 {
		e.itemsErr = fmt.Errorf("sql.items returned no item for sale %q", e.cfg.SaleID)
	}
	e.items = e.listed
	if len(e.cfg.Items) > 0 {
		e.items = e.cfg.Items
	}
}

func (e *env) loadFile() {
	if e.cfg.SaleFile == "" {
		return
	}
	sl, err := sale.LoadFile(e.cfg.SaleFile)
	if err != nil {
		e.add(finding.Finding{Group: "sale", Check: "sale file", Status: finding.Fail, Detail: err.Error(),
			Fix: "correct the field on that line of " + e.cfg.SaleFile})
		return
	}
	e.file = &sl
}

// needs returns a skip result when a dependency of a group is missing, naming it.
func needs(group string, what ...string) []finding.Finding {
	return []finding.Finding{{Group: group, Check: group, Status: finding.Skip, Detail: "not checked: needs " + joinAnd(what) + " (see above)"}}
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " and " + s[len(s)-1]
}
