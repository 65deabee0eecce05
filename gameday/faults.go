package gameday

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fsctl/fsctl/netfault"
	"github.com/fsctl/fsctl/redisconn"
	"github.com/fsctl/fsctl/room"
	"github.com/fsctl/fsctl/stack"
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

type redisRestartEmpty struct{ Down time.Duration }

func (redisRestartEmpty) Name() string { return "redis-restart-empty" }
func (f redisRestartEmpty) Describe() string {
	return fmt.Sprintf("kill -9 redis, restart it empty after %s, rebuild from PostgreSQL", f.Down)
}

func (f redisRestartEmpty) Apply(ctx context.Context, env *Env) (string, error) {
	if env.Stack.RedisCluster.Masters > 0 {
		return restartClusterEmpty(ctx, env, f.Down)
	}
	pid, err := stack.Kill(ctx, env.Stack, stack.Redis, syscall.SIGKILL)
	if err != nil {
		return "", err
	}
	env.Note("redis killed (pid %d)", pid)
	var npid int
	rebuilt, err := env.RebuildLost(ctx, func(ctx context.Context) error {
		if err := sleep(ctx, f.Down); err != nil {
			return err
		}
		if npid, err = stack.Start(ctx, env.Stack, stack.Redis, true); err != nil {
			return err
		}
		env.Note("redis restarted empty (pid %d)", npid)
		return nil
	})
	if err != nil {
		return "", err
	}
	env.Note("redis rebuilt: %s", rebuilt)
	return fmt.Sprintf("killed pid %d, restarted empty as pid %d, rebuilt: %s", pid, npid, rebuilt), nil
}

type kafkaKill struct{ Down time.Duration }

func (kafkaKill) Name() string { return "kafka-kill" }
func (f kafkaKill) Describe() string {
	return fmt.Sprintf("kill -9 the Kafka broker, restart it after %s", f.Down)
}

func (f kafkaKill) Apply(ctx context.Context, env *Env) (string, error) {
	if env.Stack.KafkaCluster.Brokers > 0 {
		return killOrdersLeader(ctx, env, f.Down)
	}
	pid, err := stack.Kill(ctx, env.Stack, stack.Kafka, syscall.SIGKILL)
	if err != nil {
		return "", err
	}
	env.Note("kafka killed (pid %d)", pid)
	if err := sleep(ctx, f.Down); err != nil {
		return "", err
	}
	begin := time.Now()
	npid, err := stack.Start(ctx, env.Stack, stack.Kafka, false)
	if err != nil {
		return "", err
	}
	env.Note("kafka back (pid %d) after a %s start", npid, time.Since(begin).Round(100*time.Millisecond))
	return fmt.Sprintf("killed pid %d, restarted as pid %d (start took %s)", pid, npid, time.Since(begin).Round(100*time.Millisecond)), nil
}

type postgresStop struct{ For time.Duration }

func (postgresStop) Name() string { return "postgres-stop" }
func (f postgresStop) Describe() string {
	return fmt.Sprintf("stop PostgreSQL for %s", f.For)
}

func (f postgresStop) Apply(ctx context.Context, env *Env) (string, error) {
	if err := stack.Stop(ctx, env.Stack, stack.Postgres); err != nil {
		return "", err
	}
	env.Note("postgres stopped")
	if err := sleep(ctx, f.For); err != nil {
		return "", err
	}
	pid, err := stack.Start(ctx, env.Stack, stack.Postgres, false)
	if err != nil {
		return "", err
	}
	env.Note("postgres back (pid %d)", pid)
	return fmt.Sprintf("stopped for %s, back as pid %d", f.For, pid), nil
}

// paymentFault changes the provider's behaviour through its API and puts it back afterwards.
// Negative numbers mean "unchanged".
type paymentFault struct {
	DeclineRate, ErrorRate float64
	Latency, Jitter        time.Duration
	Outage                 bool
	For                    time.Duration
}

func (paymentFault) Name() string { return "payment" }
func (f paymentFault) Describe() string {
	var parts []string
	if f.Outage {
		parts = append(parts, "outage")
	}
	if f.DeclineRate >= 0 {
		parts = append(parts, fmt.Sprintf("decline %g", f.DeclineRate))
	}
	if f.ErrorRate >= 0 {
		parts = append(parts, fmt.Sprintf("errors %g", f.ErrorRate))
	}
	if f.Latency >= 0 {
		parts = append(parts, fmt.Sprintf("latency %s", f.Latency))
	}
	if f.Jitter >= 0 {
		parts = append(parts, fmt.Sprintf("jitter %s", f.Jitter))
	}
	return fmt.Sprintf("payment provider %v for %s", parts, f.For)
}

// behavior is the fake provider's /v1/behavior document.
type behavior struct {
	Latency     string   `json:"latency"`
	Jitter      string   `json:"jitter"`
	DeclineRate float64  `json:"declineRate"`
	ErrorRate   float64  `json:"errorRate"`
	Outages     []window `json:"outages"`
	Uptime      string   `json:"uptime,omitempty"`
}

type window struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func (f paymentFault) Apply(ctx context.Context, env *Env) (string, error) {
	before, err := getBehavior(ctx, env.PaymentURL)
	if err != nil {
		return "", err
	}
	b := before
	b.Uptime = ""
	if f.Outage {
		up, err := time.ParseDuration(before.Uptime)
		if err != nil {
			return "", fmt.Errorf("provider uptime %q: %w", before.Uptime, err)
		}
		b.Outages = append(slices.Clone(b.Outages), window{From: up.String(), To: (up + f.For).String()})
	}
	if f.DeclineRate >= 0 {
		b.DeclineRate = f.DeclineRate
	}
	if f.ErrorRate >= 0 {
		b.ErrorRate = f.ErrorRate
	}
	if f.Latency >= 0 {
		b.Latency = f.Latency.String()
	}
	if f.Jitter >= 0 {
		b.Jitter = f.Jitter.String()
	}
	if err := putBehavior(ctx, env.PaymentURL, b); err != nil {
		return "", err
	}
	env.Note("payment provider: %s", f.Describe())
	if err := sleep(ctx, f.For); err != nil {
		return "", err
	}
	// Put the knobs back; an outage window simply ends on its own.
	restore := b
	restore.Latency, restore.Jitter, restore.DeclineRate, restore.ErrorRate = before.Latency, before.Jitter, before.DeclineRate, before.ErrorRate
	if err := putBehavior(context.WithoutCancel(ctx), env.PaymentURL, restore); err != nil {
		return "", err
	}
	env.Note("payment provider back to normal")
	return "applied and restored", nil
}

func getBehavior(ctx context.Context, base string) (behavior, error) {
	var b behavior
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/behavior", nil)
	if err != nil {
		return b, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return b, fmt.Errorf("payment provider %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("payment provider GET /v1/behavior: %s", resp.Status)
	}
	return b, json.NewDecoder(resp.Body).Decode(&b)
}

func putBehavior(ctx context.Context, base string, b behavior) error {
	body, _ := json.Marshal(b)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/v1/behavior", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("payment provider %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("payment provider PUT /v1/behavior: %s: %s", resp.Status, msg)
	}
	return nil
}

type serverKill struct{}

func (serverKill) Name() string     { return "server-kill" }
func (serverKill) Describe() string { return "SIGKILL one checkout instance" }

func (serverKill) Apply(_ context.Context, env *Env) (string, error) {
	in, err := env.Fleet.Kill(env.Rand.IntN)
	if err != nil {
		return "", err
	}
	env.Note("%s killed (pid %d)", in.Name, in.PID())
	return fmt.Sprintf("SIGKILLed %s (pid %d)", in.Name, in.PID()), nil
}

type crashAfterReserve struct{ After int }

func (crashAfterReserve) Name() string { return "server-crash-after-reserve" }
func (f crashAfterReserve) Describe() string {
	return fmt.Sprintf("an instance that dies after its reservation #%d, before the publish", f.After)
}

func (f crashAfterReserve) Apply(ctx context.Context, env *Env) (string, error) {
	in, err := env.Fleet.Start(ctx, f.After)
	if err != nil {
		return "", err
	}
	env.Note("%s armed to crash after reservation #%d", in.Name, f.After)
	// Once the buyers are gone no reservation can come; give the instance a moment more, then say so.
	buyersDone := env.BuyersDone
	var late <-chan time.Time
wait:
	for {
		select {
		case <-in.Done():
			break wait
		case <-buyersDone:
			buyersDone, late = nil, time.After(10*time.Second)
		case <-late:
			return "", fmt.Errorf("%s never reached its reservation #%d while buyers came (no unit on sale for it?): %w", in.Name, f.After, errNotTriggered)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if code := in.ExitCode(); code != 137 {
		return "", fmt.Errorf("%s exited with status %d, not the injected 137 (see its log)", in.Name, code)
	}
	env.Note("%s crashed between reserve and publish (exit 137)", in.Name)
	return fmt.Sprintf("%s (pid %d) exited 137 after reservation #%d", in.Name, in.PID(), f.After), nil
}

type serverAdd struct{}

func (serverAdd) Name() string     { return "server-add" }
func (serverAdd) Describe() string { return "add a checkout instance" }

func (serverAdd) Apply(ctx context.Context, env *Env) (string, error) {
	in, err := env.Fleet.Start(ctx, 0)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (pid %d) in rotation; %d live", in.Name, in.PID(), len(env.Fleet.Live())), nil
}

// freeze stops a service's process with SIGSTOP for For and thaws it with SIGCONT: the process
// keeps its sockets and its data but answers nothing, the way a node in a long GC pause, a
// swapped-out VM or a half-dead disk looks to its clients, which time out instead of failing fast.
type freeze struct {
	Service string
	For     time.Duration
}

func (freeze) Name() string { return "freeze" }
func (f freeze) Describe() string {
	return fmt.Sprintf("freeze %s (SIGSTOP) for %s", f.Service, f.For)
}

func (f freeze) Apply(ctx context.Context, env *Env) (string, error) {
	signal, what, err := f.target(ctx, env)
	if err != nil {
		return "", err
	}
	pid, err := signal(syscall.SIGSTOP)
	if err != nil {
		return "", err
	}
	env.Note("%s frozen (pid %d)", what, pid)
	// Thaw whatever happens: a process left stopped would hang every later step and the settle.
	defer func() {
		if _, err := signal(syscall.SIGCONT); err != nil {
			env.Note("%s: thaw: %v", what, err)
		}
	}()
	if err := sleep(ctx, f.For); err != nil {
		return "", err
	}
	env.Note("%s thawed after %s", what, f.For)
	return fmt.Sprintf("%s (pid %d) stopped for %s, then continued", what, pid, f.For), nil
}

// target is the process a freeze signals: the single node, or on a cluster the node that matters
// to the sale's first item.
func (f freeze) target(ctx context.Context, env *Env) (func(syscall.Signal) (int, error), string, error) {
	switch {
	case f.Service == stack.Redis && env.Stack.RedisCluster.Masters > 0:
		addr, err := firstShardMaster(ctx, env)
		if err != nil {
			return nil, "", err
		}
		return func(sig syscall.Signal) (int, error) { return stack.SignalClusterNode(env.Stack, addr, sig) }, "redis master " + addr, nil
	case f.Service == stack.Kafka && env.Stack.KafkaCluster.Brokers > 0:
		addr, err := ordersLeader(ctx, env)
		if err != nil {
			return nil, "", err
		}
		return func(sig syscall.Signal) (int, error) { return stack.SignalKafkaBroker(env.Stack, addr, sig) }, "kafka broker " + addr, nil
	}
	return func(sig syscall.Signal) (int, error) {
		return stack.Kill(context.WithoutCancel(ctx), env.Stack, f.Service, sig)
	}, f.Service, nil
}

// netFault slows or cuts the network between the checkout instances and one service, through the
// game day's Toxiproxy proxy in front of it, for For, then puts it back: latency each way
// (net-delay), a black hole both ways (net-partition), or any toxic a toxic step names.
type netFault struct {
	Service string
	// Proxy, instead of Service, names a proxy of the Toxiproxy server a drill drives
	// (--toxiproxy): one in front of a store of the team's own system.
	Proxy     string
	Latency   time.Duration
	Partition bool
	// Toxic, when set, is the toxic step's own.
	Toxic *netfault.Toxic
	For   time.Duration
}

func (f netFault) Name() string {
	switch {
	case f.Toxic != nil:
		return "toxic"
	case f.Partition:
		return "net-partition"
	}
	return "net-delay"
}

// toxic is what the fault puts on the proxy.
func (f netFault) toxic() netfault.Toxic {
	switch {
	case f.Toxic != nil:
		return *f.Toxic
	case f.Partition:
		return netfault.Partition()
	}
	return netfault.Latency(f.Latency, 0)
}

// on is the proxy the fault acts through: the named one, else the game day's own in front of
// the service.
func (f netFault) on() string { return cmp.Or(f.Proxy, f.Service) }

func (f netFault) Describe() string {
	switch {
	case f.Toxic != nil && f.Proxy != "":
		return fmt.Sprintf("toxic %s on proxy %s for %s", f.Toxic, f.Proxy, f.For)
	case f.Toxic != nil:
		return fmt.Sprintf("toxic %s on the network to %s for %s", f.Toxic, f.Service, f.For)
	case f.Partition:
		return fmt.Sprintf("partition the network to %s for %s", f.Service, f.For)
	}
	return fmt.Sprintf("add %s to the network to %s, each way, for %s", f.Latency, f.Service, f.For)
}

func (f netFault) Apply(ctx context.Context, env *Env) (string, error) {
	px := env.Proxies[f.on()]
	if px == nil || env.Toxiproxy == nil {
		if f.Proxy != "" {
			return "", fmt.Errorf("toxic: no proxy %s (a drill against your own system names the proxies of its --toxiproxy)", f.Proxy)
		}
		return "", fmt.Errorf("%s: no proxy in front of %s (the game day puts one there when a step needs it, on a single node, not a Redis Cluster)", f.Name(), f.Service)
	}
	env.Note("network to %s: %s", f.on(), f.Describe())
	// Inject takes the toxic off whatever happens: a partition left in place would hang the settle.
	note, err := env.Toxiproxy.Inject(ctx, px, f.toxic(), f.For)
	if err != nil {
		return "", err
	}
	env.Note("network to %s back to normal", f.on())
	return note, nil
}

type roomLost struct{}

func (roomLost) Name() string     { return "room-state-lost" }
func (roomLost) Describe() string { return "the waiting room's state lost" }

func (roomLost) Apply(ctx context.Context, env *Env) (string, error) {
	rdb, err := redisconn.Open(env.Endpoints.RedisURL, redisconn.Tune{})
	if err != nil {
		return "", err
	}
	defer rdb.Close()
	// What a Redis that loses the room's keys leaves behind: an empty queue, no admissions. The
	// room's own keys are counted (the database's size moves with every other client's keys).
	gone, err := room.New(rdb).Delete(ctx, env.SaleID)
	if err != nil {
		return "", err
	}
	env.Note("waiting room state deleted (%d key(s) gone)", gone)
	return fmt.Sprintf("deleted %d key(s) of the room of sale %s", gone, env.SaleID), nil
}

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
