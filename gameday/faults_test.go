package gameday

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/netfault"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/warroom"
)

// Each fault on its own, on the real processes of the private stack; mustPass checks the
// invariants after recovery (no oversell, nothing lost, every RESERVED answer ended in
// PostgreSQL as paid, expired, cancelled or failed, paid and cancelled answers as told).

func TestFaultRedisRestartEmpty(t *testing.T) {
	rep := mustPass(t, testScenario("redis", Step{At: 1500 * time.Millisecond, Fault: redisRestartEmpty{Down: 300 * time.Millisecond}}))
	if !strings.Contains(rep.Steps[0].Note, "rebuilt") {
		t.Errorf("step note %q: want the rebuild", rep.Steps[0].Note)
	}
}

func TestFaultKafkaKill(t *testing.T) {
	mustPass(t, testScenario("kafka", Step{At: time.Second, Fault: kafkaKill{Down: 500 * time.Millisecond}}))
}

// The war room records the run too: its snapshots land in warroom.jsonl and its changes (the
// orders panel losing PostgreSQL) in the timeline.
func TestFaultPostgresStop(t *testing.T) {
	var wr *WarRoom
	rep := mustPass(t, testScenario("postgres", Step{At: time.Second, Fault: postgresStop{For: 2 * time.Second}}), func(c *Config) {
		wr = NewWarRoom(c.Stack.Endpoints(), c.Scenario.Sale.ID, filepath.Join(c.WorkDir, "warroom.jsonl"))
		c.Timeline = wr
	})
	f, err := os.Open(wr.RecordPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := warroom.ReadRecords(f)
	if err != nil || len(recs) < 2 {
		t.Fatalf("war room records: %d, %v", len(recs), err)
	}
	var fromWarroom []string
	for _, e := range rep.Timeline {
		if e.Source == "warroom" {
			fromWarroom = append(fromWarroom, e.What)
		}
	}
	if !slices.ContainsFunc(fromWarroom, func(s string) bool { return strings.HasPrefix(s, "panel orders: ") }) {
		t.Errorf("the timeline does not show the orders panel losing PostgreSQL: %q", fromWarroom)
	}
}

func TestFaultPaymentOutage(t *testing.T) {
	sc := testScenario("payment-outage", Step{At: 0, Fault: paymentFault{Outage: true, For: 3 * time.Second, DeclineRate: -1, ErrorRate: -1, Latency: -1, Jitter: -1}})
	sc.Pay, sc.Cancel = 0.9, 0.05
	rep := mustPass(t, sc)
	if n := followUps(rep, "PAYMENT_UNAVAILABLE"); n == 0 {
		t.Errorf("no buyer saw PAYMENT_UNAVAILABLE during the outage: %+v", rep.FollowUps)
	}
}

func TestFaultPaymentDeclinesAndLatency(t *testing.T) {
	sc := testScenario("payment-declines", Step{At: 0, Fault: paymentFault{DeclineRate: 0.5, Latency: 400 * time.Millisecond, ErrorRate: -1, Jitter: -1, For: 4 * time.Second}})
	sc.Pay, sc.Cancel = 0.9, 0.05
	rep := mustPass(t, sc)
	if n := followUps(rep, "PAYMENT_DECLINED"); n == 0 {
		t.Errorf("no buyer was declined: %+v", rep.FollowUps)
	}
}

func TestFaultServerKill(t *testing.T) {
	rep := mustPass(t, testScenario("server-kill", Step{At: time.Second, Fault: serverKill{}}))
	if !strings.Contains(rep.Steps[0].Note, "SIGKILLed server-") {
		t.Errorf("step note %q", rep.Steps[0].Note)
	}
}

func TestFaultServerCrashAfterReserve(t *testing.T) {
	// Enough units that some are still on sale when the armed instance joins (~0.5 s after the release).
	sc := testScenario("crash", Step{At: 0, Fault: crashAfterReserve{After: 1}})
	sc.Sale.Items[0].Quantity = 300
	rep := mustPass(t, sc)
	if !strings.Contains(rep.Steps[0].Note, "exited 137") {
		t.Errorf("step note %q: want the injected exit", rep.Steps[0].Note)
	}
}

func TestFaultServerAdd(t *testing.T) {
	rep := mustPass(t, testScenario("server-add", Step{At: time.Second, Fault: serverAdd{}}))
	if !strings.Contains(rep.Steps[0].Note, "3 live") {
		t.Errorf("step note %q: want a third instance in rotation", rep.Steps[0].Note)
	}
}

// An instance started while the broker is down (a pod scaled up or restarted during the outage)
// waits for it (fsctl serve --start-wait) and joins, where it used to exit at once with "kafka
// unreachable" (chaos seed 5 found it; the same for PostgreSQL).
func TestInstanceStartedWhileKafkaIsDownWaits(t *testing.T) {
	rep := mustPass(t, testScenario("add-during-kafka-kill",
		Step{At: time.Second, Fault: kafkaKill{Down: 2 * time.Second}, Line: 1},
		Step{At: 1300 * time.Millisecond, Fault: serverAdd{}, Line: 2}))
	add := rep.Steps[1]
	if !strings.Contains(add.Note, "3 live") {
		t.Errorf("step note %q: want a third instance in rotation", add.Note)
	}
	if kill := rep.Steps[0]; add.Started+add.Took < kill.Started+kill.Took-500*time.Millisecond {
		t.Errorf("the instance was ready at +%s, before the broker was back at +%s: the fault missed it", add.Started+add.Took, kill.Started+kill.Took)
	}
}

// Buyers go through a waiting room that lets 50 a second through, so a queue is waiting when its
// state is deleted; whoever was in it must not break an invariant.
func TestFaultRoomStateLost(t *testing.T) {
	sc := testScenario("room", Step{At: 1500 * time.Millisecond, Fault: roomLost{}})
	sc.Sale.Room = &RoomSpec{AdmissionRate: 50}
	rep := mustPass(t, sc)
	if !strings.Contains(rep.Steps[0].Note, "deleted") || strings.Contains(rep.Steps[0].Note, "deleted 0 key") {
		t.Errorf("step note %q: want the room's keys deleted", rep.Steps[0].Note)
	}
}

// Redis and Kafka frozen (SIGSTOP) at once: buyers time out and retry instead of failing fast,
// nothing is lost. Two faults on one service wait for each other (the second freeze of Redis
// starts when the first thaws), while the Kafka freeze overlaps both.
func TestFaultFreezeOverlapping(t *testing.T) {
	rep := mustPass(t, testScenario("freeze",
		Step{At: time.Second, Fault: freeze{Service: stack.Redis, For: time.Second}, Line: 1},
		Step{At: time.Second, Fault: freeze{Service: stack.Redis, For: time.Second}, Line: 2},
		Step{At: 1500 * time.Millisecond, Fault: freeze{Service: stack.Kafka, For: 2 * time.Second}, Line: 3}))
	waited := 0
	for _, s := range rep.Steps {
		if !strings.Contains(s.Note, "stopped for") || !strings.Contains(s.Note, "then continued") {
			t.Errorf("step %d note %q: want the freeze and the thaw", s.Line, s.Note)
		}
		if strings.HasPrefix(s.Note, "waited ") {
			waited++
			if !strings.Contains(s.Note, "on redis") {
				t.Errorf("step %d waited for %q", s.Line, s.Note)
			}
		}
	}
	if waited != 1 {
		t.Errorf("%d steps waited for another; want the second Redis freeze only: %+v", waited, rep.Steps)
	}
	// The two Redis freezes race for the service at the same moment; either may go first.
	first := rep.Steps[0]
	if rep.Steps[1].Started < first.Started {
		first = rep.Steps[1]
	}
	if k := rep.Steps[2]; k.Started > first.Started+first.Took || k.Started < first.Started {
		t.Errorf("the Kafka freeze (from +%s) did not overlap the first Redis freeze (+%s for %s)", k.Started, first.Started, first.Took)
	}
}

// The network to Redis cut while the network to PostgreSQL is slow, through the game day's
// proxies: buyers time out and retry, nothing is lost, and both are put back.
func TestFaultNetPartitionAndDelay(t *testing.T) {
	rep := mustPass(t, testScenario("net",
		Step{At: time.Second, Fault: netFault{Service: stack.Redis, Partition: true, For: 1500 * time.Millisecond}, Line: 1},
		Step{At: time.Second, Fault: netFault{Service: stack.Postgres, For: 2 * time.Second,
			Toxic: &netfault.Toxic{Type: "latency", Stream: netfault.Both, Attributes: map[string]int{"latency": 300, "jitter": 100}}}, Line: 2}))
	for _, s := range rep.Steps {
		if !strings.Contains(s.Note, " on "+[]string{"redis", "postgres"}[s.Line-1]+" (127.0.0.1:") || !strings.Contains(s.Note, "then removed") {
			t.Errorf("step %d note %q: want the toxic on the service's proxy, then removed", s.Line, s.Note)
		}
	}
	// The partition holds answers back rather than failing them: some try waited most of it.
	var slowest time.Duration
	for _, r := range rep.records {
		if !r.Started.IsZero() && !r.Done.IsZero() {
			slowest = max(slowest, r.Done.Sub(r.Started))
		}
	}
	if slowest < time.Second {
		t.Errorf("slowest answer %s: a 1.5 s partition from Redis held no buyer back", slowest)
	}
}

// A fault whose process is not there fails its step with a message that says so.
func TestFaultProcessNotFound(t *testing.T) {
	empty := stack.Config{Dir: t.TempDir(), RedisPort: 26399, PostgresPort: 25499, KafkaPort: 29099, KafkaControllerPort: 29098}
	env := &Env{Stack: empty, Note: func(string, ...any) {}}
	for _, f := range []Fault{kafkaKill{}, redisRestartEmpty{}, postgresStop{For: time.Millisecond}} {
		t.Run(f.Name(), func(t *testing.T) {
			_, err := f.Apply(context.Background(), env)
			if !errors.Is(err, stack.ErrNotRunning) {
				t.Fatalf("err = %v, want ErrNotRunning", err)
			}
			if !strings.Contains(err.Error(), "process not running") {
				t.Errorf("message %q does not say the process is missing", err)
			}
		})
	}
	if _, err := stack.Kill(context.Background(), empty, "memcached", syscall.SIGKILL); err == nil || !strings.Contains(err.Error(), "unknown service") {
		t.Errorf("unknown service: err = %v", err)
	}
}

// In a run, such a step fails the game day and the report names the step's line.
func TestStepThatCannotApplyFailsTheRun(t *testing.T) {
	cfg := privateStack(t)
	sc := testScenario("not-found", Step{At: 0, Line: 12, Fault: serverKill{}}) // one instance: nothing may be killed
	sc.Servers, sc.Buyers = 1, 50
	rep, err := Run(context.Background(), Config{Scenario: sc, Stack: cfg, Teardown: TeardownNever, Fsctl: fsctl(t), WorkDir: t.TempDir(), Out: lineWriter{t}})
	if err == nil || rep.Passed {
		t.Fatalf("run passed with a step that could not apply (err %v)", err)
	}
	if !strings.Contains(err.Error(), "line 12 server-kill") {
		t.Errorf("err %q does not name the step", err)
	}
	if len(rep.Steps) != 1 || !strings.Contains(rep.Steps[0].Error, "need 2 so one survives") {
		t.Errorf("step result %+v", rep.Steps)
	}
}

func followUps(rep *Report, answer string) int {
	n := 0
	for _, f := range rep.FollowUps {
		if f.Answer == answer {
			n += f.Count
		}
	}
	return n
}

// TestFaultRedisMasterKill: the sale on a Redis Cluster (3 masters, a replica each) in the private
// stack; the master of the item's shard is killed for 5 s, long enough for its replica to take
// over, and started again, when it rejoins as a replica. Every invariant holds afterwards.
func TestFaultRedisMasterKill(t *testing.T) {
	rep := mustPass(t, testScenario("master", Step{At: time.Second, Fault: redisMasterKill{Down: 5 * time.Second}}), func(c *Config) {
		c.Stack.RedisCluster = stack.ClusterLayout{Masters: 3, Replicas: 1, Port: privClusterPort}
	})
	if note := rep.Steps[0].Note; !strings.Contains(note, "killed master 127.0.0.1:") || !strings.Contains(note, "now a replica") {
		t.Errorf("step note %q: want the master killed and back as its replica's replica", note)
	}
	if !strings.Contains(rep.Phases[0].Detail, "the sale runs on a Redis Cluster of 3 masters (1 replica(s) each)") {
		t.Errorf("stack phase %q: want what the sale ran on", rep.Phases[0].Detail)
	}
}
