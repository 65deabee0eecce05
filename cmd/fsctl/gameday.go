package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/gameday"
	"github.com/fsctl/fsctl/internal/harness/stack"
)

type gamedayOptions struct {
	stack     stackOptions
	scenario  string
	reportDir string
	teardown  string
	output    outputFlag
	print     bool
	noWarroom bool
	chaos     bool
	chaosCfg  gameday.ChaosConfig
	seeds     int
	soakEvery time.Duration
	// budgetUndecided and budgetOutage replace the scenario's availability budget where given.
	budgetUndecided float64
	budgetOutage    time.Duration
}

func newGamedayCmd() *cobra.Command {
	o := &gamedayOptions{stack: stackOptions{cfg: stack.DefaultConfig()}}
	var faults strings.Builder
	for _, n := range gameday.FaultNames() {
		fmt.Fprintf(&faults, "  %-27s %s\n", n, gameday.FaultDoc(n))
	}
	cmd := &cobra.Command{
		Use:   "gameday",
		Short: "Run a scripted game day: stack, sale, preflight, burst, faults, settle, reconcile, report",
		Long: `gameday plays a scenario against the local stack: it brings the stack up (unless it runs),
creates the scenario's sale afresh, starts checkout instances (fsctl serve) behind a round-robin
proxy with the bundled fake payment provider, runs preflight, releases the buyers on an open
schedule while each step injects its fault at its moment, waits for every hold to end, reconciles
Redis with PostgreSQL and checks the invariants. Exit status 0 when everything held, 4 when an
invariant broke, 3 when only the availability budget (or the soak) was missed, 1 when the run could
not go on, 2 for a bad flag or scenario. The stack is stopped at the end if the game day started it (--teardown),
also on Ctrl-C.

Faults a step can name:
` + faults.String() + `
Without -f/--file the built-in scenario runs (fsctl gameday --print-default shows it).

With --chaos the scenario is drawn from --seed instead of read from a file: buyers arrive for
--duration in a trickle (--rate) with bursts on top, retry (waiting what a 503's Retry-After asks,
at most --retry-after) and replay their keys, pay, cancel or abandon, while a nemesis injects --faults faults at random moments, overlapping each other (kills
of instances, also between the reserve and the publish, Redis restarted empty or frozen, Kafka
killed or frozen, PostgreSQL stopped, the payment provider down or slow; a Redis Cluster master
with --redis-cluster). Then everything heals, the sale settles and the checker judges the whole
history: every 202 a buyer heard is an order in PostgreSQL, nothing oversold or lost, the same key
never answered two ways. A failing seed prints its fault timeline and the command that replays
it; --chaos-steps keeps some of its steps, to shrink it by hand.`,
		Example: `  fsctl gameday                                   # the built-in scenario on ./.stack
  fsctl gameday -f examples/gameday.yaml --report-dir /tmp/gameday
  fsctl gameday --chaos --seed 7                  # a seeded random schedule of overlapping faults
  fsctl gameday --chaos --seed 7 --chaos-steps 2,5 # the same run with only its steps 2 and 5
  fsctl gameday --chaos --duration 30m --soak 30s # a soak: memory, goroutines, files and Redis over time, judged
  fsctl gameday --dir /tmp/gd --redis-port 26379 --postgres-port 25432 --kafka-port 29092 --kafka-controller-port 29093`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGameday(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.scenario, "file", "f", "", "scenario file (YAML); empty runs the built-in one")
	deprecatedAlias(f, "scenario", "file") // -f is --file on every command
	f.StringVar(&o.reportDir, "report-dir", "gameday-report", "folder for report.md, report.html, report.json and the servers' logs")
	f.StringVar(&o.teardown, "teardown", string(gameday.TeardownAuto), "stop the stack at the end: auto (if the game day started it), always, never")
	bindOutput(f, &o.output, "the final report on stdout")
	f.BoolVar(&o.print, "print-default", false, "print the built-in scenario and exit")
	f.BoolVar(&o.noWarroom, "no-warroom", false, "do not record the war room's timeline (warroom.jsonl) during the run")
	f.StringVar(&o.stack.cfg.Dir, "dir", o.stack.cfg.Dir, "stack folder (env "+stack.EnvStackDir+")")
	showStackDir(f)
	f.IntVar(&o.stack.cfg.RedisPort, "redis-port", o.stack.cfg.RedisPort, "Redis port of the stack")
	f.IntVar(&o.stack.cfg.PostgresPort, "postgres-port", o.stack.cfg.PostgresPort, "PostgreSQL port of the stack")
	f.IntVar(&o.stack.cfg.KafkaPort, "kafka-port", o.stack.cfg.KafkaPort, "Kafka broker port of the stack")
	f.IntVar(&o.stack.cfg.KafkaControllerPort, "kafka-controller-port", o.stack.cfg.KafkaControllerPort, "Kafka controller port of the stack")
	f.StringVar(&o.stack.cfg.KafkaLibs, "kafka-libs", "", "folder of the Kafka broker jars (default <dir>/kafka/libs)")
	f.IntVar(&o.stack.cfg.RedisCluster.Masters, "redis-cluster", 0, "run the sale on the stack's Redis Cluster of this many masters (started if it is not running; redis-restart-empty then hits every node, and redis-master-kill is possible)")
	f.IntVar(&o.stack.cfg.RedisCluster.Replicas, "redis-cluster-replicas", 0, "replicas per master of that Redis Cluster")
	f.IntVar(&o.stack.cfg.RedisCluster.Port, "redis-cluster-port", 0, fmt.Sprintf("port of the Redis Cluster's first node (default %d; a secure stack's %d)", stack.DefaultRedisClusterPort, stack.DefaultSecureRedisClusterPort))
	f.IntVar(&o.stack.cfg.KafkaCluster.Brokers, "kafka-cluster", 0, "run the sale on the stack's replicated Kafka of this many brokers (kafka-kill then kills the orders partition's leader)")
	f.IntVar(&o.stack.cfg.KafkaCluster.Port, "kafka-cluster-port", 0, fmt.Sprintf("port of the replicated Kafka's first broker (default %d; a secure stack's %d)", stack.DefaultKafkaClusterPort, stack.DefaultSecureKafkaClusterPort))
	deprecatedAlias(f, "kafka-brokers", "kafka-cluster") // --kafka-brokers is a broker list everywhere else
	f.BoolVar(&o.chaos, "chaos", false, "draw the scenario from --seed: a trickle and bursts of buyers under overlapping random faults")
	f.Uint64Var(&o.chaosCfg.Seed, "seed", 1, "with --chaos: the seed the run is drawn from; with a scenario: replaces its seed")
	f.DurationVar(&o.chaosCfg.Duration, "duration", gameday.DefaultChaosDuration, "with --chaos: how long buyers arrive and faults come")
	o.chaosCfg.Rate = gameday.DefaultChaosRate
	bindRate(f, &o.chaosCfg.Rate, "with --chaos: the trickle's buyers between the bursts")
	f.DurationVar(&o.chaosCfg.RetryAfter, "retry-after", gameday.DefaultChaosRetryAfter, "with --chaos: the most a buyer waits before a retry when the answer carries a Retry-After, as the sale's app does; 0 retries at once")
	f.IntVar(&o.chaosCfg.Faults, "faults", 0, "with --chaos: how many faults the nemesis draws (default one per 3s of --duration, at least 3)")
	f.IntVar(&o.seeds, "seeds", 1, "with --chaos: run this many seeds, from --seed on, one after the other, and sum them up (reports in <report-dir>/seed-N)")
	f.DurationVar(&o.soakEvery, "soak", 0, "sample every instance's memory, goroutines and open files and Redis's memory and keys this often while buyers arrive (e.g. 30s), print them over time, and fail the run when one grew without bound: the last third's peak above the first third's by half and a margin (make soak)")
	f.Float64Var(&o.budgetUndecided, "budget-undecided", 0, "fail (exit 3) when more than this share of buyers (0 to 1, e.g. 0.15) got no definitive answer; replaces the scenario's budget.undecided")
	f.DurationVar(&o.budgetOutage, "budget-outage", 0, "fail (exit 3) on a longer stretch of arrivals with no definitive answer (e.g. 5s); replaces the scenario's budget.outage")
	f.IntSliceVar(&o.chaosCfg.Only, "chaos-steps", nil, "with --chaos: keep only these steps of the seed's schedule (e.g. 2,5), to shrink a failing seed")
	cmd.AddCommand(newGamedayDrillCmd())
	return cmd
}

func runGameday(cmd *cobra.Command, o *gamedayOptions) error {
	if o.print {
		_, err := cmd.OutOrStdout().Write(gameday.DefaultYAML())
		return err
	}
	td := gameday.Teardown(o.teardown)
	if td != gameday.TeardownAuto && td != gameday.TeardownAlways && td != gameday.TeardownNever {
		return usageError(fmt.Errorf("--teardown %q: want auto, always or never", o.teardown))
	}
	if o.soakEvery < 0 {
		return usageError(fmt.Errorf("--soak %s: want how often to sample, e.g. 30s", o.soakEvery))
	}
	sc, err := o.scenarioOf(cmd.Flags())
	if err != nil {
		return err
	}
	budget, err := o.budget(cmd.Flags())
	if err != nil {
		return usageError(err)
	}
	dir, err := filepath.Abs(o.reportDir)
	if err != nil {
		return err
	}
	if o.chaos && o.seeds > 1 {
		return runChaosSeeds(cmd, o, td, dir, budget)
	}
	return playGameday(cmd, o, sc.WithBudget(budget), td, dir)
}

// verdictError gives a failed game day its exit status: 4 an invariant broken, 1 a run that
// could not go on, 3 only a figure missed (the budget, the soak).
func verdictError(v gameday.Verdict, err error) error {
	switch v {
	case gameday.VerdictBroken:
		return invariantBroken(err)
	case gameday.VerdictFailed:
		return err
	case gameday.VerdictMissed:
		return checkFailed(err)
	}
	return nil
}

// reportError is how a game day or a drill that ran ends: nil when it passed and its report was
// written (a report that could not be written is runErr: exit 1), else its error ("game day NAME
// failed" when it had none) with the exit status of its verdict.
func reportError(rep *gameday.Report, runErr error) error {
	if rep.Passed {
		return runErr
	}
	if runErr == nil {
		runErr = fmt.Errorf("%s %s failed", rep.Kind, rep.Scenario)
	}
	return verdictError(rep.Verdict(), runErr)
}

// playGameday runs one scenario, writes its reports to dir and prints its report.
func playGameday(cmd *cobra.Command, o *gamedayOptions, sc gameday.Scenario, td gameday.Teardown, dir string) error {
	if err := sc.Check(); err != nil {
		return usageError(err) // before the stack, the sale and any buyer
	}
	progress := o.output.beside(cmd.OutOrStdout(), cmd.ErrOrStderr())
	scfg, err := o.stack.config(cmd, progress)
	if err != nil {
		return err
	}
	cfg := gameday.Config{Scenario: sc, Stack: scfg, Teardown: td, WorkDir: dir, Out: progress, SoakEvery: o.soakEvery}
	rep, runErr := gameday.Play(cmd.Context(), cfg, !o.noWarroom)
	if rep == nil {
		return runErr
	}
	if err := writeReport(cmd.OutOrStdout(), o.output, rep); err != nil {
		return err
	}
	if !o.output.json() {
		fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", filepath.Join(dir, "report.md"))
	}
	return reportError(rep, runErr)
}
