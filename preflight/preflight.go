// Package preflight is the pre-sale readiness check: it probes PostgreSQL, Redis, Kafka, the
// checkout servers and their clocks for one sale and says "ready", or exactly what is not and how
// to fix it. Every target is read through its profile, the bundled server's included; what only
// fsctl serve offers (its schema, sale definition, scripts, controls and repairs) is the bundled
// capability, asked for where it is used. With Fix it applies the few repairs that cannot hurt
// (preload missing stock, load the scripts, create the topics, or what the profile's fix section
// declares) and checks again.
package preflight

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// Report is the outcome of one preflight.
type Report struct {
	SaleID string `json:"sale"`
	// Profile names the target profile the checks read the checkout through; ProfileSource is
	// where it came from.
	Profile       string            `json:"profile"`
	ProfileSource string            `json:"profileSource,omitempty"`
	At            time.Time         `json:"at"`
	Results       []finding.Finding `json:"results"`
	// Fixed lists what --fix did before Results were taken again.
	Fixed     []finding.Applied `json:"fixed,omitempty"`
	ElapsedMs float64           `json:"elapsedMs"`
}

// Count returns how many results have the given status.
func (r Report) Count(s finding.Status) int { return finding.Count(r.Results, s) }

// Ready reports whether the sale may open: no failure, and no warning when strict.
func (r Report) Ready(strict bool) bool { return finding.OK(r.Results, strict) }

// Config says what to check and where. Endpoints default to nothing: the CLI fills them from its
// flags and environment.
type Config struct {
	SaleID string
	// Profile describes the target; nil is the bundled server's. Every target is checked through
	// its profile; only a deep one (fsctl serve) adds its schema, sale, scripts, controls and repairs.
	Profile *profile.Profile
	// Items, when set, restricts the profile and stock checks to these items (else every item
	// sql.items returns).
	Items []string
	// TokenSecret, when set, is the HS256 secret the profile check mints its sample token with
	// (else the profile's own secret or secretEnv).
	TokenSecret string
	RedisURL    string
	PostgresURL string
	Kafka       kafkaconn.Conn
	// OrdersTopic, DeadLetterTopic and ConsumerGroup default to the profile's kafka section (no
	// topic there: no order log to check).
	OrdersTopic, DeadLetterTopic, ConsumerGroup string
	// Partitions is the orders topic's partition count when --fix creates it.
	Partitions int
	// Servers are the base URLs of the checkout instances (http://host:port).
	Servers []string
	// RoomRedisURL is where the waiting rooms live; empty means RedisURL.
	RoomRedisURL string
	// SwitchesKey is the Redis hash of the kill switches (control.Key when empty).
	SwitchesKey string
	// SaleFile, when set, is the sale definition the stored sale must match.
	SaleFile string
	// PaymentTimeout is the servers' payment call timeout, which must stay below the hold TTL.
	PaymentTimeout time.Duration
	// CapacityReport is a `fsctl blast --output json` report whose throughput the admission rate
	// must stay below.
	CapacityReport string
	// MaxSkew bounds the clock difference between this machine and each other clock.
	MaxSkew time.Duration
	// MaxRedisRTT is the round trip above which Redis is too far: a warning when even the fastest
	// of the pings takes longer.
	MaxRedisRTT time.Duration
	// ExpectPaused: the sale (and its room) should be paused, as before a manual opening.
	ExpectPaused bool
	// Fix applies the safe repairs and runs the checks again.
	Fix bool
	// Timeout bounds every probe, so an unreachable service is a failed check, never a hang.
	Timeout time.Duration
	// Now is this machine's clock (injected by tests).
	Now func() time.Time
	// HTTP is the client of the server probes.
	HTTP *http.Client
}

// Defaults fills what the caller left out.
func (c *Config) Defaults() {
	c.Profile = profile.OrBundled(c.Profile)
	// The bundled server's profile names its own order log (events.LogNames).
	k := c.Profile.Kafka
	c.OrdersTopic, c.DeadLetterTopic, c.ConsumerGroup = cmp.Or(c.OrdersTopic, k.Topic), cmp.Or(c.DeadLetterTopic, k.DeadLetter), cmp.Or(c.ConsumerGroup, k.Group)
	if c.Partitions <= 0 {
		c.Partitions = 6
	}
	if c.PaymentTimeout <= 0 {
		c.PaymentTimeout = lifecycle.DefaultConfig().PaymentTimeout
	}
	if c.MaxSkew <= 0 {
		c.MaxSkew = 250 * time.Millisecond
	}
	if c.MaxRedisRTT <= 0 {
		c.MaxRedisRTT = 5 * time.Millisecond
	}
	if c.Timeout <= 0 {
		c.Timeout = 1500 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.HTTP == nil {
		c.HTTP = &http.Client{Timeout: c.Timeout}
	}
}

// Validate says what the configuration lacks for its target: fsctl serve's checks read the sale
// definition, so its sale must be named (a label passed to another profile's templates may be
// left out).
func (c Config) Validate() error {
	if c.SaleID == "" && offersBundled(profile.OrBundled(c.Profile)) {
		return errors.New(`required flag "sale" not set`)
	}
	return nil
}

// DefaultConsumerGroup is the bundled server's order consumer group.
const DefaultConsumerGroup = events.DefaultConsumerGroup

// Run checks everything once; with cfg.Fix it applies the safe repairs of what failed and checks
// again, reporting the second run and what was repaired. Problems are results, never errors: Run
// fails only when ctx ends.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg.Defaults()
	start := time.Now()
	results, e := runOnce(ctx, cfg)
	defer e.close() // the repairs use its connections
	var fixed []finding.Applied
	if cfg.Fix {
		if fixed = finding.ApplyAll(ctx, results, 5*cfg.Timeout); len(fixed) > 0 {
			var again *env
			results, again = runOnce(ctx, cfg)
			again.close()
		}
	}
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	return Report{SaleID: cfg.SaleID, Profile: cfg.Profile.Name, ProfileSource: cfg.Profile.Source(),
		At: cfg.Now().UTC(), Results: results, Fixed: fixed,
		ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}, nil
}

// groupOrder is the order the checklist is printed in.
var groupOrder = []string{"schema", "profile", "sale", "stock", "redis", "kafka", "security", "servers", "clocks", "capacity", "controls"}

// runOnce connects, then runs every group of checks in parallel, each under the probe timeout.
// The caller closes the env once it is done with the results' repairs.
func runOnce(ctx context.Context, cfg Config) ([]finding.Finding, *env) {
	e := connect(ctx, cfg)
	groups := []func(context.Context, *env) []finding.Finding{checkProfile, checkStock, checkRedis, checkKafka, checkSecurity, checkServers, checkClocks}
	for _, g := range bundledGroups {
		if e.bundled == nil {
			e.add(g.skip)
			continue
		}
		groups = append(groups, g.run)
	}
	out := make([][]finding.Finding, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() {
			gctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			defer cancel()
			out[i] = g(gctx, e)
		})
	}
	wg.Wait()
	all := slices.Concat(e.connectResults, slices.Concat(out...))
	slices.SortStableFunc(all, func(a, b finding.Finding) int {
		return slices.Index(groupOrder, a.Group) - slices.Index(groupOrder, b.Group)
	})
	return all, e
}
