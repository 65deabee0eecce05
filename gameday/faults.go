package gameday

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/harness/netfault"
	"github.com/fsctl/fsctl/internal/harness/stack"
)

// Fault is one thing a step does to the running sale. Apply returns once the fault has been
// applied and, where the fault has a duration, recovered from; the note says what it did.
type Fault interface {
	Name() string
	Describe() string
	Apply(ctx context.Context, env *Env) (note string, err error)
}

// Env is what faults act on: the stack's processes, the checkout fleet, the payment provider.
type Env struct {
	Stack      stack.Config
	Endpoints  stack.Endpoints
	Fleet      *Fleet
	PaymentURL string
	SaleID     string
	// FirstItem is the sale's first item and FirstItemShards its shard count: where the faults
	// that pick one node of a cluster aim.
	FirstItem       string
	FirstItemShards int
	Rand            *seeded
	// Proxies stand between the checkout instances and a service ("redis", "postgres") when a
	// network fault needs them, proxies of the Toxiproxy server Toxiproxy drives.
	Proxies   map[string]*netfault.Proxy
	Toxiproxy *netfault.Client
	// Rebuild restores the sale's Redis state from PostgreSQL (reconcile with RebuildRedis).
	Rebuild func(ctx context.Context) (string, error)
	// RebuildLost is Rebuild for a Redis that was killed: restart brings it back empty while the
	// order log is recorded, and the rebuild does not wait for Kafka again.
	RebuildLost func(ctx context.Context, restart func(context.Context) error) (string, error)
	// BuyersDone is closed once the last buyer has been answered.
	BuyersDone <-chan struct{}
	// Note adds a line to the run's timeline.
	Note func(format string, args ...any)
}

// errNotTriggered is a fault whose trigger never came: a chaos run notes it, a scripted one fails.
var errNotTriggered = errors.New("the fault's trigger never came")

// holder is a fault that acts on one service: two such faults on the same service never run at
// once (the later waits), so a drawn schedule cannot restart a Redis that another fault is
// restarting; faults on different services overlap freely.
type holder interface{ Holds() string }

func (redisRestartEmpty) Holds() string { return stack.Redis }
func (redisMasterKill) Holds() string   { return stack.Redis }
func (kafkaKill) Holds() string         { return stack.Kafka }
func (postgresStop) Holds() string      { return stack.Postgres }
func (paymentFault) Holds() string      { return "payment" }
func (f freeze) Holds() string          { return f.Service }
func (serverKill) Holds() string        { return "fleet" }
func (f netFault) Holds() string        { return "network to " + f.on() }
func (serverAdd) Holds() string         { return "fleet" }

// faultKind parses one fault from its step's keys.
type faultKind struct {
	params []string
	doc    string
	parse  func(m fields, p *parser) (Fault, error)
}

var faultKinds = map[string]faultKind{
	"redis-restart-empty": {[]string{"down"}, "kill -9 redis-server (every node of a Redis Cluster), delete its data, start it empty after `down`, then rebuild the sale's Redis state from PostgreSQL",
		func(m fields, p *parser) (Fault, error) {
			f := redisRestartEmpty{}
			p.dur(m, "down", &f.Down)
			return f, nil
		}},
	"kafka-kill": {[]string{"down"}, "kill -9 the Kafka broker (on a replicated Kafka, the leader of the orders partition), restart it (data kept) after `down`",
		func(m fields, p *parser) (Fault, error) {
			f := kafkaKill{}
			p.dur(m, "down", &f.Down)
			return f, nil
		}},
	"redis-master-kill": {[]string{"down", "wipe"}, "on a Redis Cluster (--redis-cluster): kill -9 the master of the first item's shard 0, start it again after `down` (wipe: true without its data)",
		func(m fields, p *parser) (Fault, error) {
			f := redisMasterKill{Down: 2 * time.Second}
			p.dur(m, "down", &f.Down)
			p.bool(m, "wipe", &f.Wipe)
			return f, nil
		}},
	"postgres-stop": {[]string{"for"}, "stop PostgreSQL (fast shutdown) and start it again after `for`",
		func(m fields, p *parser) (Fault, error) {
			f := postgresStop{For: 3 * time.Second}
			p.dur(m, "for", &f.For)
			return f, nil
		}},
	"payment": {[]string{"declineRate", "errorRate", "latency", "jitter", "outage", "for"},
		"change the payment provider for `for`: decline/error rates, latency spikes, or a full outage (every call 503)",
		func(m fields, p *parser) (Fault, error) {
			f := paymentFault{For: 5 * time.Second}
			f.DeclineRate, f.ErrorRate = -1, -1
			f.Latency, f.Jitter = -1, -1
			if m.get("declineRate") != nil {
				p.share(m, "declineRate", &f.DeclineRate)
			}
			if m.get("errorRate") != nil {
				p.share(m, "errorRate", &f.ErrorRate)
			}
			if m.get("latency") != nil {
				p.dur(m, "latency", &f.Latency)
			}
			if m.get("jitter") != nil {
				p.dur(m, "jitter", &f.Jitter)
			}
			p.bool(m, "outage", &f.Outage)
			p.dur(m, "for", &f.For)
			if p.err == nil && !f.Outage && f.DeclineRate < 0 && f.ErrorRate < 0 && f.Latency < 0 && f.Jitter < 0 {
				return nil, lineErr(m.node, "payment: say what changes (declineRate, errorRate, latency, jitter or outage: true)")
			}
			return f, nil
		}},
	"server-kill": {nil, "SIGKILL one checkout instance picked by the seed (another keeps serving)",
		func(fields, *parser) (Fault, error) { return serverKill{}, nil }},
	"server-crash-after-reserve": {[]string{"after"}, "start an instance armed to exit(137) after its Nth fresh reservation, between the reserve and the publish",
		func(m fields, p *parser) (Fault, error) {
			f := crashAfterReserve{After: 1}
			p.int(m, "after", &f.After, 1, 1_000_000)
			return f, nil
		}},
	"server-add": {nil, "start one more checkout instance mid-sale and put it in rotation",
		func(fields, *parser) (Fault, error) { return serverAdd{}, nil }},
	"freeze": {[]string{"service", "for"}, "SIGSTOP a service for `for`, then SIGCONT: redis (on a Redis Cluster the master of the first item's shard 0) or kafka (on a replicated Kafka the orders partition's leader); it answers nothing, and does not die",
		func(m fields, p *parser) (Fault, error) {
			f := freeze{For: 2 * time.Second}
			if err := p.service(m, &f.Service, stack.Redis, stack.Kafka); err != nil {
				return nil, err
			}
			p.dur(m, "for", &f.For)
			return f, nil
		}},
	"net-delay": {[]string{"service", "latency", "for"}, "add `latency` (200ms) to every chunk between the checkout instances and redis or postgres, each way, for `for` (3s), through the game day's proxy",
		func(m fields, p *parser) (Fault, error) {
			f := netFault{Latency: 200 * time.Millisecond, For: 3 * time.Second}
			if err := p.service(m, &f.Service, stack.Redis, stack.Postgres); err != nil {
				return nil, err
			}
			p.dur(m, "latency", &f.Latency)
			p.dur(m, "for", &f.For)
			return f, nil
		}},
	"net-partition": {[]string{"service", "for"}, "cut the network between the checkout instances and redis or postgres for `for` (2s): no byte passes, nothing is closed",
		func(m fields, p *parser) (Fault, error) {
			f := netFault{Partition: true, For: 2 * time.Second}
			if err := p.service(m, &f.Service, stack.Redis, stack.Postgres); err != nil {
				return nil, err
			}
			p.dur(m, "for", &f.For)
			return f, nil
		}},
	"toxic": {[]string{"service", "proxy", "toxic", "stream", "toxicity", "attributes", "for"},
		"put a Toxiproxy toxic between the checkout instances and redis or postgres (`service`), or on a proxy of your Toxiproxy server (`proxy`, in a drill with --toxiproxy), for `for` (3s): latency, bandwidth, timeout, reset_peer, slicer or limit_data, on the downstream, upstream or both streams, its `attributes` as Toxiproxy names them",
		func(m fields, p *parser) (Fault, error) {
			t := netfault.Toxic{Stream: netfault.Downstream}
			f := netFault{For: 3 * time.Second, Toxic: &t}
			p.str(m, "proxy", &f.Proxy)
			switch {
			case f.Proxy != "" && m.get("service") != nil:
				return nil, lineErr(m.node, "toxic: give service (the game day's own proxy) or proxy (one of your Toxiproxy's), not both")
			case f.Proxy == "":
				if err := p.service(m, &f.Service, stack.Redis, stack.Postgres); err != nil {
					return nil, err
				}
			}
			p.str(m, "toxic", &t.Type)
			p.str(m, "stream", &t.Stream)
			var share float64
			if m.get("toxicity") != nil {
				p.share(m, "toxicity", &share)
				t.Toxicity = float32(share)
			}
			p.ints(m, "attributes", &t.Attributes)
			p.dur(m, "for", &f.For)
			if p.err == nil {
				if t.Type == "" {
					return nil, lineErr(m.node, "toxic: say which (%s)", strings.Join(slices.Sorted(maps.Keys(netfault.Kinds)), ", "))
				}
				if err := t.Validate(); err != nil {
					return nil, lineErr(m.node, "%v", err)
				}
			}
			return f, nil
		}},
	"exec": {[]string{"command", "timeout", "expect"}, "run a command at the step's moment: a list (the program and its words) or a line for sh -c; killed with its children after `timeout` (30s); its exit status (`expect`, 0) and last lines go in the timeline",
		parseExec},
	"http": {[]string{"method", "url", "headers", "body", "expect", "timeout"}, "send one request (`method` POST) to `url`, such as the shop's own pause switch, and want `expect` (any 2xx when left out) within `timeout` (10s); ${VARIABLES} in the url, headers and body come from the environment",
		parseHTTP},
	"room-state-lost": {nil, "delete the sale's waiting-room state in Redis (queue, admissions, counters)",
		func(fields, *parser) (Fault, error) { return roomLost{}, nil }},
}

// FaultNames lists the faults a step can name, sorted.
func FaultNames() []string {
	var out []string
	for k := range faultKinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// FaultDoc is the one-line description of a fault, for help texts.
func FaultDoc(name string) string { return faultKinds[name].doc }

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
