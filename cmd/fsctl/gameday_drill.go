package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/drill"
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
}

func newGamedayDrillCmd() *cobra.Command {
	var o gamedayDrillOptions
	cmd := &cobra.Command{
		Use:   "drill",
		Short: "Burst, settle, reconcile and check the invariants of your own running checkout, through its profile",
		Long: `A game day against your own running checkout: fsctl does not own its processes, so no faults are
injected — release a burst through the profile, wait until the sale settles, reconcile, check the
invariants. Exit 0 passed, 4 an invariant broken, 1 the drill could not run, 2 a bad flag.

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
	return cmd
}

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
