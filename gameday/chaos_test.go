package gameday

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// faultNames lists a schedule's faults, with their settings, in order.
func faultNames(sc Scenario) []string {
	var out []string
	for _, st := range sc.Steps {
		out = append(out, st.At.String()+" "+st.Fault.Describe())
	}
	return out
}

// The seed decides the whole run: the same seed draws the same buyers and faults, another seed
// another run.
func TestChaosIsDrawnFromTheSeed(t *testing.T) {
	a, err := Chaos(ChaosConfig{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Chaos(ChaosConfig{Seed: 7})
	c, _ := Chaos(ChaosConfig{Seed: 8})
	if !reflect.DeepEqual(faultNames(a), faultNames(b)) || !slices.Equal(a.Arrivals, b.Arrivals) {
		t.Fatalf("seed 7 drew two different runs:\n%v\n%v", faultNames(a), faultNames(b))
	}
	if reflect.DeepEqual(faultNames(a), faultNames(c)) && slices.Equal(a.Arrivals, c.Arrivals) {
		t.Fatal("seeds 7 and 8 drew the same run")
	}
	if len(a.Steps) != 6 || a.Buyers != len(a.Arrivals) || a.Buyers < 1000 || a.Servers != 3 || a.Replays != 1 {
		t.Errorf("seed 7: %s, %d steps, replays %d", a, len(a.Steps), a.Replays)
	}
	if a.Sale.ID == c.Sale.ID {
		t.Errorf("seeds 7 and 8 share the sale %s; a reset keeps paid orders, so another seed's quantities would be refused", a.Sale.ID)
	}
	if a.Units() < int64(a.Buyers)/4 || a.Sale.Items[0].Shards < 2 {
		t.Errorf("seed 7: %d units for %d buyers, first item on %d shard(s)", a.Units(), a.Buyers, a.Sale.Items[0].Shards)
	}
	if d := a.Duration(); d > DefaultChaosDuration || d < DefaultChaosDuration*9/10 {
		t.Errorf("arrivals last %s, want about %s", d, DefaultChaosDuration)
	}
	// Bursts: many buyers at one instant on top of the trickle.
	same := 1
	for i := 1; i < len(a.Arrivals); i++ {
		if a.Arrivals[i] == a.Arrivals[i-1] {
			same++
		}
	}
	if same < 100 {
		t.Errorf("only %d buyers share an arrival instant; want bursts", same)
	}
}

// Over many seeds the nemesis draws every kind of fault, puts faults on different services in
// one window, and never kills an instance unless three stand in its model of the fleet.
func TestChaosFaultsOverlapAndLeaveASurvivor(t *testing.T) {
	kinds := map[string]bool{}
	overlapping := 0
	for seed := range uint64(200) {
		sc, err := Chaos(ChaosConfig{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		live := chaosServers
		for i, st := range sc.Steps {
			kinds[st.Fault.Name()+" "+strings.Fields(st.Fault.Describe())[0]] = true
			if _, ok := nemesis[st.Kind]; !ok {
				t.Fatalf("seed %d step %d: kind %q is not one of the nemesis's (the tally of --seeds counts by it)", seed, i+1, st.Kind)
			}
			switch st.Fault.(type) {
			case serverKill:
				if live < chaosServers {
					t.Fatalf("seed %d step %d kills with %d live", seed, i+1, live)
				}
				live--
			case serverAdd:
				live++
			}
			if i > 0 && st.At-sc.Steps[i-1].At < time.Second {
				overlapping++
			}
		}
	}
	for _, want := range []string{"redis-restart-empty kill", "freeze freeze", "kafka-kill kill", "postgres-stop stop",
		"payment payment", "server-kill SIGKILL", "server-crash-after-reserve an", "server-add add",
		"net-delay add", "net-partition partition"} {
		if !kinds[want] {
			t.Errorf("200 seeds never drew %q (drawn: %v)", want, kinds)
		}
	}
	if kinds["redis-master-kill kill"] {
		t.Error("redis-master-kill drawn without a Redis Cluster")
	}
	if overlapping < 100 {
		t.Errorf("only %d faults within a second of the one before, over 200 seeds; the nemesis should overlap them", overlapping)
	}
	sc, _ := Chaos(ChaosConfig{Seed: 3, RedisCluster: true, Faults: 40})
	if !slices.ContainsFunc(sc.Steps, func(s Step) bool { return s.Fault.Name() == "redis-master-kill" }) {
		t.Errorf("40 faults on a Redis Cluster and no redis-master-kill: %v", faultNames(sc))
	}
	// No proxy can stand in front of a cluster: its network faults hit PostgreSQL.
	for _, st := range sc.Steps {
		if nf, ok := st.Fault.(netFault); ok && nf.Service != "postgres" {
			t.Errorf("on a Redis Cluster: %s", nf.Describe())
		}
	}
}

// --chaos-steps keeps some steps of a seed's schedule, numbered as drawn, to shrink a failing
// seed; the replay command carries them.
func TestChaosShrinkByHand(t *testing.T) {
	all, _ := Chaos(ChaosConfig{Seed: 11, Duration: 30 * time.Second})
	some, err := Chaos(ChaosConfig{Seed: 11, Duration: 30 * time.Second, Only: []int{2, 5}, RetryAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(some.Steps) != 2 || some.Steps[0].Fault.Describe() != all.Steps[1].Fault.Describe() || some.Steps[1].At != all.Steps[4].At {
		t.Fatalf("steps 2 and 5 of %v: got %v", faultNames(all), faultNames(some))
	}
	if !slices.Equal(some.Arrivals, all.Arrivals) {
		t.Error("shrinking the faults changed the buyers")
	}
	if some.RetryAfter != 2*time.Second || all.RetryAfter != 0 {
		t.Errorf("buyers wait at most %s (want 2s) and %s (want 0: at once) for a Retry-After", some.RetryAfter, all.RetryAfter)
	}
	want := "fsctl gameday --chaos --seed 11 --duration 30s --rate 60/s --faults 10 --retry-after 2s --chaos-steps 2,5"
	if got := some.Chaos.Command(); got != want {
		t.Errorf("replay command %q, want %q", got, want)
	}
	if _, err := Chaos(ChaosConfig{Seed: 11, Only: []int{99}}); err == nil || !strings.Contains(err.Error(), "draws steps 1 to 6") {
		t.Errorf("a step the seed does not draw: err %v", err)
	}
	for _, bad := range []ChaosConfig{{Duration: 2 * time.Hour}, {Rate: -1}, {Faults: 1000}, {Only: []int{0}}, {RetryAfter: -time.Second}} {
		if _, err := Chaos(bad); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

// TestDrawnFromTheDeclaredSteps: a drill's --chaos draws its steps from the ones the scenario
// declares, the same for the same seed, another for another, over the arrivals, each named by the
// line it came from; a scenario that declares none cannot be drawn from.
func TestDrawnFromTheDeclaredSteps(t *testing.T) {
	sc, err := ParseDrill([]byte(`name: staging
buyers: 3000
rate: 100/s
steps:
  - {at: 1s, fault: toxic, proxy: redis, toxic: latency, attributes: {latency: 100}, for: 2s}
  - {at: 2s, fault: http, url: "https://shop.example/admin/failover", expect: 202}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := sc.Drawn(5, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sc.Drawn(5, 0)
	c, _ := sc.Drawn(6, 0)
	if len(a.Steps) != 10 || fmt.Sprint(a.Steps) != fmt.Sprint(b.Steps) || fmt.Sprint(a.Steps) == fmt.Sprint(c.Steps) {
		t.Fatalf("seed 5: %d steps (want one per 3 s of 30 s), the same again %v, another seed %v", len(a.Steps), fmt.Sprint(a.Steps) == fmt.Sprint(b.Steps), fmt.Sprint(a.Steps) != fmt.Sprint(c.Steps))
	}
	kinds := map[string]int{}
	for i, st := range a.Steps {
		kinds[st.Kind]++
		if st.Line != i+1 || st.At < 0 || st.At > 27*time.Second || (i > 0 && st.At < a.Steps[i-1].At) {
			t.Errorf("step %d: %+v", i, st)
		}
	}
	if kinds["toxic (line 5)"]+kinds["http (line 6)"] != 10 || kinds["toxic (line 5)"] == 0 || kinds["http (line 6)"] == 0 {
		t.Errorf("drawn kinds %v: want both declared steps, nothing else", kinds)
	}
	if a.Name != "staging-chaos-5" || a.Seed != 5 {
		t.Errorf("name %q seed %d", a.Name, a.Seed)
	}
	sc.Steps = nil
	if _, err := sc.Drawn(5, 0); err == nil || !strings.Contains(err.Error(), "declares none") {
		t.Errorf("no steps: %v", err)
	}
}
