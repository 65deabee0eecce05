package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/gameday"
	"github.com/fsctl/fsctl/gameday/drill"
	"github.com/fsctl/fsctl/internal/harness/netfault"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
)

type gamedayDrillOptions struct {
	endpoints endpointFlags
	profile   profileFlag
	target    string
	sale      string
	items     []string
	buyers    int
	rate      float64
	conns     int
	settle    time.Duration
	secret    jwtSecretFlag
	output    outputFlag
	// scenario, when set, is a drill scenario (buyers on a schedule, exec, http and toxic steps,
	// judged as a game day); toxiproxy the team's Toxiproxy its toxic steps name proxies of.
	scenario  string
	toxiproxy string
	reportDir string
	// chaos redraws the scenario's steps from seed: faults of them at random moments.
	chaos  bool
	seed   uint64
	faults int
}

func newGamedayDrillCmd() *cobra.Command {
	var o gamedayDrillOptions
	cmd := &cobra.Command{
		Use:   "drill",
		Short: "Burst, settle, reconcile and check the invariants of your own running checkout, through its profile",
		Long: `A game day against your own running checkout: release a burst through the profile, wait until
the sale settles, reconcile, check the invariants. fsctl does not own its processes: faults come
from a scenario (-f FILE, the game day's format) of steps that act on your system: exec (a
command: kubectl delete pod, a managed Redis's failover, systemctl restart), http (your shop's own
pause or kill switch) and toxic (a Toxiproxy toxic on a proxy of your Toxiproxy server,
--toxiproxy URL, in front of a store). The buyers arrive on the scenario's schedule, the steps fire
at their moments, and the whole history is judged as the local game day's: every RESERVED answer
is an order, nothing is oversold, the same key never gets two answers, no 500, and the scenario's
availability budget holds. Every program, variable and proxy the steps name is checked before any
buyer arrives. Exit 0 passed, 4 an invariant broken, 3 only the budget missed, 1 the drill could
not run or a step failed, 2 a bad flag or scenario. A scenario against a staging checkout:

  fsctl gameday drill -f examples/drill-faults.yaml --toxiproxy http://toxiproxy.staging:8474 \
      --profile my-shop.yaml --sale bf --target https://staging-shop.internal

The target is read and bought from only through --profile (default: the bundled server's): its
items and stock from the profile's SQL, the burst through its purchase template and token, the
settle from its order log's consumer lag and live orders, the reconcile through its keys and
queries (order by order for fsctl serve). The drill passes when every answer and state invariant
held, the sale settled within --settle, reconcile found nothing and no item sold beyond its stock.`,
		Example: `  fsctl gameday drill --sale black-friday --target http://127.0.0.1:8080
  fsctl gameday drill --profile profiles/spring-article.yaml --sale article --target http://127.0.0.1:8090
  fsctl gameday drill --sale black-friday --buyers 5000 --rate 1000/s --settle 2m -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGamedayDrill(cmd, o)
		},
	}
	f := cmd.Flags()
	o.endpoints.bind(f, true)
	o.profile.bind(f)
	bindTarget(f, &o.target, "http://127.0.0.1:8080", "base URL of the checkout")
	bindSale(f, &o.sale, "the sale (a label passed to the profile's templates and queries)")
	bindItems(f, &o.items, "item buyers go for (round-robin); default: every item of the profile's sql.items")
	f.IntVar(&o.buyers, "buyers", 2000, "virtual buyers in the burst")
	bindRate(f, &o.rate, "release the buyers at this rate instead of all at one instant")
	f.IntVar(&o.conns, "conns", 64, "pre-dialled connections the buyers share")
	f.DurationVar(&o.settle, "settle", time.Minute, "bound on the wait for the sale to settle after the burst")
	o.secret.bind(f)
	bindOutput(f, &o.output, "the report")
	f.StringVarP(&o.scenario, "file", "f", "", "a drill scenario, as the game day's -f: buyers on a schedule and exec, http and toxic steps acting on your system (examples/drill-faults.yaml)")
	deprecatedAlias(f, "scenario", "file")
	addressString(f, &o.toxiproxy, "toxiproxy", os.Getenv(envToxiproxy), "your Toxiproxy server's API (http://host:8474), whose proxies the scenario's toxic steps name (env "+envToxiproxy+")")
	f.BoolVar(&o.chaos, "chaos", false, "with -f/--file: draw the steps from the ones the scenario declares, at moments drawn from --seed (a failing seed prints the command that replays it)")
	f.Uint64Var(&o.seed, "seed", 1, "with --chaos: the seed of the draw")
	f.IntVar(&o.faults, "faults", 0, "with --chaos: how many steps to draw (default one per 3s of the arrivals, at least one per declared step)")
	f.StringVar(&o.reportDir, "report-dir", "", "with -f/--file: also write report.md, report.html and report.json here")
	return cmd
}

// envToxiproxy names the variable of a team's Toxiproxy server's API.
const envToxiproxy = "FSCTL_TOXIPROXY_URL"

func runGamedayDrill(cmd *cobra.Command, o gamedayDrillOptions) error {
	prof, err := o.profile.load()
	if err != nil {
		return err
	}
	if o.sale == "" {
		return usageError(errors.New("--sale is required"))
	}
	if o.buyers < 1 || o.conns < 1 || o.settle <= 0 {
		return usageError(errors.New("--buyers and --conns must be at least 1, --settle positive"))
	}
	kc, err := o.endpoints.kafkaConn(cmd.ErrOrStderr(), prof)
	if err != nil {
		return err
	}
	if o.scenario != "" {
		return runScenarioDrill(cmd, o, prof, kc)
	}
	for _, name := range []string{"chaos", "seed", "faults", "toxiproxy", "report-dir"} {
		if cmd.Flags().Changed(name) {
			return usageError(fmt.Errorf("--%s is a setting of a scenario drill (-f FILE)", name))
		}
	}
	cfg := drill.Config{Profile: prof, Target: o.target, Sale: o.sale, Items: o.items,
		RedisURL: o.endpoints.redisURL, PostgresURL: o.endpoints.postgresURL, Kafka: kc,
		Buyers: o.buyers, Conns: o.conns, Rate: o.rate, Settle: o.settle, Secret: o.secret.forProfile(prof), Progress: cmd.ErrOrStderr()}
	rep, err := drill.Run(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	err = writeReport(out, o.output, rep)
	if err != nil {
		return err
	}
	if !rep.Passed {
		return invariantBroken(fmt.Errorf("drill failed: %d invariant(s) broken, see the report", len(rep.Failures)))
	}
	return nil
}

// runScenarioDrill plays a drill scenario against the target: everything its steps name is
// checked before any buyer arrives (exit 2), then the run is judged as a game day's.
func runScenarioDrill(cmd *cobra.Command, o gamedayDrillOptions, prof *profile.Profile, kc kafkaconn.Conn) error {
	for _, name := range []string{"buyers", "rate", "settle"} {
		if cmd.Flags().Changed(name) {
			return usageError(fmt.Errorf("--%s: with -f/--file the scenario says it", name))
		}
	}
	sc, err := gameday.LoadDrillFile(o.scenario)
	if err != nil {
		return err // exitCode tells a file that cannot be read from one that is wrong
	}
	var replay string
	switch {
	case !o.chaos && cmd.Flags().Changed("faults"):
		return usageError(errors.New("--faults is a setting of --chaos"))
	case !o.chaos && cmd.Flags().Changed("seed"):
		sc.Seed = o.seed // the scenario's own draws (a step's jitter)
	}
	if o.chaos {
		if sc, err = sc.Drawn(o.seed, o.faults); err != nil {
			return usageError(err)
		}
		replay = fmt.Sprintf("fsctl gameday drill -f %s --chaos --seed %d --faults %d (with this run's --profile, --target, --sale and stores)", o.scenario, o.seed, len(sc.Steps))
	}
	if err := sc.Check(); err != nil {
		return usageError(err)
	}
	t := &gameday.Target{Profile: prof, URL: o.target, Sale: o.sale, Items: o.items, RedisURL: o.endpoints.redisURL,
		PostgresURL: o.endpoints.postgresURL, Kafka: kc, Secret: o.secret.forProfile(prof), Conns: o.conns}
	if names := sc.Proxies(); len(names) > 0 {
		if o.toxiproxy == "" {
			return usageError(fmt.Errorf("the scenario's toxic steps name proxies (%s): give --toxiproxy URL (env %s)", strings.Join(names, ", "), envToxiproxy))
		}
		if t.Toxiproxy, err = netfault.Dial(o.toxiproxy); err != nil {
			return err
		}
		for _, name := range names {
			if _, err := t.Toxiproxy.Proxy(name); err != nil {
				return usageError(err) // a typo must not cost a sale's worth of traffic
			}
		}
	}
	rep, runErr := gameday.Run(cmd.Context(), gameday.Config{Scenario: sc, Target: t, Out: o.output.beside(cmd.OutOrStdout(), cmd.ErrOrStderr()),
		WorkDir: o.reportDir, Replay: replay})
	if rep == nil {
		return runErr
	}
	if o.reportDir != "" {
		if err := rep.WriteFiles(o.reportDir); err != nil {
			return err
		}
	}
	if err := writeReport(cmd.OutOrStdout(), o.output, rep); err != nil {
		return err
	}
	return reportError(rep, runErr)
}
