package gameday

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ChaosConfig is what a chaos game day is drawn from. The seed decides everything else: when the
// buyers arrive (a trickle and bursts), who pays, cancels, retries or replays, and the nemesis's
// faults, their moments and their lengths, overlapping each other. The same seed and settings
// draw the same run, so a failing seed is replayed with --seed.
type ChaosConfig struct {
	Seed uint64
	// Duration is how long buyers keep arriving and faults keep coming (default 20s).
	Duration time.Duration
	// Rate is the trickle's arrivals per second between the bursts (default 60/s).
	Rate float64
	// Faults is how many faults the nemesis draws (default one per 3 s of Duration, at least 3).
	Faults int
	// RedisCluster and KafkaCluster say that the sale runs on a Redis Cluster or a replicated
	// Kafka, so that the nemesis also draws the faults that exist only there.
	RedisCluster, KafkaCluster bool
	// Only keeps just these steps (numbered from 1) of the drawn schedule, the others dropped: a
	// failing seed is shrunk by hand to the faults that matter.
	Only []int
	// RetryAfter is the most a buyer waits before a retry when the answer carries a Retry-After,
	// as the sale's app does (fsctl gameday --retry-after, default DefaultChaosRetryAfter); 0: the
	// buyers retry at once, all their tries landing in the same outage.
	RetryAfter time.Duration
}

// Chaos defaults.
const (
	DefaultChaosDuration = 20 * time.Second
	DefaultChaosRate     = 60.0
	// DefaultChaosRetryAfter is what the built-in scenario's buyers wait at most (default.yaml).
	DefaultChaosRetryAfter = 2 * time.Second
	chaosServers           = 3
)

func (c ChaosConfig) withDefaults() ChaosConfig {
	if c.Duration <= 0 {
		c.Duration = DefaultChaosDuration
	}
	if c.Rate <= 0 {
		c.Rate = DefaultChaosRate
	}
	if c.Faults <= 0 {
		c.Faults = max(3, int(c.Duration/(3*time.Second)))
	}
	return c
}

// Validate reports settings that cannot make a run.
func (c ChaosConfig) Validate() error {
	switch {
	case c.Duration < 0 || c.Duration > time.Hour:
		return fmt.Errorf("chaos duration %s: want up to 1h", c.Duration)
	case c.Rate < 0 || c.Rate > 5000 || math.IsNaN(c.Rate):
		return fmt.Errorf("chaos rate %g: want up to 5000 buyers a second", c.Rate)
	case c.Faults < 0 || c.Faults > 500:
		return fmt.Errorf("chaos faults %d: want up to 500", c.Faults)
	case c.RetryAfter < 0 || c.RetryAfter > time.Minute:
		return fmt.Errorf("retry-after %s: want up to 1m (0 retries at once)", c.RetryAfter)
	}
	for _, n := range c.Only {
		if n < 1 {
			return fmt.Errorf("chaos step %d: steps are numbered from 1", n)
		}
	}
	return nil
}

// Command is the fsctl command line that draws the same run again.
func (c ChaosConfig) Command() string {
	c = c.withDefaults()
	var b strings.Builder
	fmt.Fprintf(&b, "fsctl gameday --chaos --seed %d --duration %s --rate %g/s --faults %d --retry-after %s", c.Seed, c.Duration, c.Rate, c.Faults, c.RetryAfter)
	if c.RedisCluster {
		b.WriteString(" --redis-cluster 3")
	}
	if c.KafkaCluster {
		b.WriteString(" --kafka-cluster 3")
	}
	if len(c.Only) > 0 {
		ns := make([]string, len(c.Only))
		for i, n := range c.Only {
			ns[i] = strconv.Itoa(n)
		}
		b.WriteString(" --chaos-steps " + strings.Join(ns, ","))
	}
	return b.String()
}

// nemesisFault is one kind of fault the nemesis may draw, with its share of the draws.
type nemesisFault struct {
	weight int
	// cluster: only on a Redis Cluster.
	cluster bool
	draw    func(r *rand.Rand) Fault
}

// between is a uniform duration in [lo, hi], in 100 ms steps.
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	steps := int64((hi - lo) / (100 * time.Millisecond))
	return lo + time.Duration(r.Int64N(steps+1))*100*time.Millisecond
}

var nemesis = map[string]nemesisFault{
	"server-kill": {3, false, func(*rand.Rand) Fault { return serverKill{} }},
	"server-crash-after-reserve": {3, false, func(r *rand.Rand) Fault {
		return crashAfterReserve{After: 1 + r.IntN(3)}
	}},
	"server-add": {1, false, func(*rand.Rand) Fault { return serverAdd{} }},
	"redis-restart-empty": {2, false, func(r *rand.Rand) Fault {
		return redisRestartEmpty{Down: between(r, 0, time.Second)}
	}},
	"redis-freeze": {2, false, func(r *rand.Rand) Fault {
		return freeze{Service: "redis", For: between(r, 500*time.Millisecond, 3*time.Second)}
	}},
	"kafka-kill": {2, false, func(r *rand.Rand) Fault {
		return kafkaKill{Down: between(r, 0, 2*time.Second)}
	}},
	"kafka-freeze": {2, false, func(r *rand.Rand) Fault {
		return freeze{Service: "kafka", For: between(r, time.Second, 4*time.Second)}
	}},
	"postgres-stop": {2, false, func(r *rand.Rand) Fault {
		return postgresStop{For: between(r, time.Second, 4*time.Second)}
	}},
	"payment-outage": {1, false, func(r *rand.Rand) Fault {
		return paymentFault{Outage: true, DeclineRate: -1, ErrorRate: -1, Latency: -1, Jitter: -1, For: between(r, time.Second, 4*time.Second)}
	}},
	"payment-slow": {1, false, func(r *rand.Rand) Fault {
		return paymentFault{Latency: between(r, 300*time.Millisecond, 1500*time.Millisecond), Jitter: 200 * time.Millisecond,
			DeclineRate: -1, ErrorRate: 0.1, For: between(r, 2*time.Second, 5*time.Second)}
	}},
	"net-delay": {2, false, func(r *rand.Rand) Fault {
		return netFault{Service: netService(r), Latency: between(r, 50*time.Millisecond, 800*time.Millisecond), For: between(r, time.Second, 4*time.Second)}
	}},
	"net-partition": {2, false, func(r *rand.Rand) Fault {
		return netFault{Service: netService(r), Partition: true, For: between(r, 500*time.Millisecond, 3*time.Second)}
	}},
	"redis-master-kill": {2, true, func(r *rand.Rand) Fault {
		return redisMasterKill{Down: between(r, time.Second, 3*time.Second), Wipe: r.IntN(3) == 0}
	}},
}

// netService is the service a network fault stands in front of.
func netService(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return "redis"
	}
	return "postgres"
}

// Chaos draws a game day from c's seed: three instances, two items (one over four stock shards,
// so borrowing runs), buyers arriving in a trickle with bursts on top, who retry and replay
// their key, pay, cancel or abandon, and the nemesis's faults at random moments over the
// arrivals, overlapping each other (two faults on one service wait for each other; see holder).
func Chaos(c ChaosConfig) (Scenario, error) {
	if err := c.Validate(); err != nil {
		return Scenario{}, err
	}
	c = c.withDefaults()
	r := rand.New(rand.NewPCG(c.Seed, c.Seed^0x5eed_c4a0_5eed_c4a0))
	arrivals := chaosArrivals(r, c)
	buyers := len(arrivals)
	// About a third of the buyers find a unit at first; cancels and expiries put units back on
	// sale, so the sale keeps selling while the faults come.
	units := max(int64(buyers)/3, 20)
	sc := Scenario{
		Name: fmt.Sprintf("chaos-%d", c.Seed), Seed: c.Seed, Servers: chaosServers,
		Sale: SaleSpec{ID: fmt.Sprintf("chaos-%d", c.Seed), HoldTTL: 2 * time.Second, PerUserLimit: 1, Items: []ItemSpec{
			{ID: "hot", Quantity: units / 2, Shards: 4},
			{ID: "cool", Quantity: units - units/2, Shards: 1},
		}},
		Buyers: buyers, Arrivals: arrivals, Rate: float64(buyers) / max(c.Duration.Seconds(), 1),
		Pay: 0.4, Cancel: 0.2, Retries: 3, Replays: 1, RetryAfter: c.RetryAfter,
		Settle: 2*time.Minute + time.Duration(c.Faults)*10*time.Second,
		Chaos:  &c,
	}
	sc.Steps = drawFaults(r, c)
	if len(c.Only) > 0 {
		kept := sc.Steps[:0]
		for _, st := range sc.Steps {
			if slices.Contains(c.Only, st.Line) {
				kept = append(kept, st)
			}
		}
		if len(kept) != len(c.Only) {
			return Scenario{}, fmt.Errorf("--chaos-steps %v: seed %d draws steps 1 to %d", c.Only, c.Seed, len(sc.Steps))
		}
		sc.Steps = kept
	}
	return sc, nil
}

// chaosArrivals is the trickle (Poisson arrivals at c.Rate) with a burst every 8 s or so on top:
// 2 to 5 seconds' worth of the trickle at one instant, as when a sale page is shared.
func chaosArrivals(r *rand.Rand, c ChaosConfig) []time.Duration {
	var at []time.Duration
	for t := 0.0; t < c.Duration.Seconds(); t += r.ExpFloat64() / c.Rate {
		at = append(at, time.Duration(t*float64(time.Second)))
	}
	bursts := 1 + int(c.Duration/(8*time.Second))
	for range bursts {
		when := time.Duration(r.Int64N(int64(c.Duration)))
		n := int(c.Rate * float64(2+r.IntN(4)))
		for range n {
			at = append(at, when)
		}
	}
	slices.Sort(at)
	return at
}

// drawFaults draws c.Faults faults at uniform moments over the arrivals, in time order, numbered
// from 1. Instances are killed only while three stand (at the start, or after one was added), so
// every kill leaves a survivor.
func drawFaults(r *rand.Rand, c ChaosConfig) []Step {
	names := make([]string, 0, len(nemesis))
	for n, f := range nemesis {
		if !f.cluster || c.RedisCluster {
			names = append(names, n)
		}
	}
	slices.Sort(names) // map order is random; the draw must not be
	total := 0
	for _, n := range names {
		total += nemesis[n].weight
	}
	ats := make([]time.Duration, c.Faults)
	for i := range ats {
		ats[i] = time.Duration(r.Int64N(int64(c.Duration) * 9 / 10)).Round(100 * time.Millisecond)
	}
	slices.Sort(ats)
	live := chaosServers
	steps := make([]Step, 0, len(ats))
	for i, at := range ats {
		pick := r.IntN(total)
		var name string
		for _, n := range names {
			if pick -= nemesis[n].weight; pick < 0 {
				name = n
				break
			}
		}
		switch {
		case name == "server-kill" && live < chaosServers:
			name = "server-add"
			live++
		case name == "server-kill":
			live--
		case name == "server-add":
			live++
		}
		f := nemesis[name].draw(r)
		if nf, ok := f.(netFault); ok && c.RedisCluster && nf.Service == "redis" {
			nf.Service = "postgres" // a cluster's clients follow MOVED to the nodes' own addresses, around a proxy
			f = nf
		}
		steps = append(steps, Step{At: at, Fault: f, Line: i + 1, Kind: name})
	}
	return steps
}

// Drawn is a drill's scenario with its steps drawn by seed from the ones it declares (fsctl
// gameday drill -f FILE --chaos --seed N): faults steps (0: one per 3 s of the arrivals, and at
// least one per declared step), each a declared step's fault at a moment drawn uniformly over the
// first nine tenths of the arrivals, in time order and numbered from 1. The same file, seed and
// count draw the same schedule. Declare faults that end on their own (a toxic for a time, a pod
// deleted that its Deployment replaces, a failover): a stop drawn without its start would leave
// the target down.
func (s Scenario) Drawn(seed uint64, faults int) (Scenario, error) {
	if len(s.Steps) == 0 {
		return s, errors.New("--chaos draws from the scenario's steps, and it declares none")
	}
	d := s.Duration()
	if faults <= 0 {
		faults = max(len(s.Steps), int(d/(3*time.Second)))
	}
	if faults > 500 {
		return s, fmt.Errorf("--faults %d: want up to 500", faults)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x5eed_c4a0_5eed_c4a0))
	ats := make([]time.Duration, faults)
	for i := range ats {
		ats[i] = time.Duration(r.Int64N(max(int64(d)*9/10, 1))).Round(100 * time.Millisecond)
	}
	slices.Sort(ats)
	drawn := make([]Step, len(ats))
	for i, at := range ats {
		src := s.Steps[r.IntN(len(s.Steps))]
		drawn[i] = Step{At: at, Fault: src.Fault, Line: i + 1, Kind: fmt.Sprintf("%s (line %d)", src.Fault.Name(), src.Line)}
	}
	s.Name, s.Seed, s.Steps = fmt.Sprintf("%s-chaos-%d", s.Name, seed), seed, drawn
	return s, nil
}
