package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/demo"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/server"
)

type demoOptions struct {
	endpoints endpointFlags
	file      string
	items     []string
	buyers    int
	conns     int
	verbose   bool
	roomRate  float64
	output    outputFlag
}

func newDemoCmd() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the checkout, fire a burst of buyers at one item, and check nothing was oversold",
		Long: `Run the whole purchase path once on the real services: start the checkout server and order
consumer in-process, reset and open the sample sale, release every buyer at the same instant,
wait for the orders to reach PostgreSQL, and print the outcome counts and the invariant checks.
Exits non-zero when an invariant is broken. Needs the local stack (` + "`fsctl stack up`" + `) or your own
services through the --*-url flags.`,
		Example: `  fsctl demo
  fsctl demo --buyers 5000 --item controller
  fsctl demo --room-rate 2000       # every buyer queues, solves a proof of work, buys when admitted
  fsctl demo -o json | jq .passed`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd, o) },
	}
	o.endpoints.bind(cmd.Flags(), true)
	cmd.Flags().StringVarP(&o.file, "file", "f", "examples/sale.yaml", "sale definition")
	bindItems(cmd.Flags(), &o.items, "the one item every buyer tries to buy")
	if len(o.items) == 0 {
		o.items = []string{"console"}
		cmd.Flags().Lookup("item").DefValue = "[console]"
	}
	cmd.Flags().IntVar(&o.buyers, "buyers", 2000, "buyers released at once")
	cmd.Flags().IntVar(&o.conns, "conns", 256, "client connections the buyers share")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show the server's log")
	_ = cmd.Flags().MarkShorthandDeprecated("verbose", "use --verbose (-v is --version)")
	cmd.Flags().Float64Var(&o.roomRate, "room-rate", 0, "put a waiting room admitting this many buyers per second in front of the sale (with a 10-bit proof of work); 0 = none")
	deprecatedAlias(cmd.Flags(), "room", "room-rate")
	bindOutput(cmd.Flags(), &o.output, "the outcome and the invariants")
	return cmd
}

func runDemo(cmd *cobra.Command, o demoOptions) error {
	if len(o.items) != 1 {
		return usageError(fmt.Errorf("--item %v: the demo's buyers all go for one item", o.items))
	}
	sl, err := sale.LoadFile(o.file)
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	out := cmd.OutOrStdout()
	progress := o.output.beside(out, cmd.ErrOrStderr())
	announceChange(progress, "the demo resets sale "+sl.ID, o.endpoints.redisURL, o.endpoints.postgresURL)
	var room *sale.Room
	if o.roomRate < 0 {
		return usageError(fmt.Errorf("--room-rate %g: an admission rate must be positive", o.roomRate))
	}
	if o.roomRate > 0 {
		room = &sale.Room{Enabled: true, AdmissionRate: o.roomRate, MaxActive: max(1, int(o.roomRate/2)),
			FairStart: sale.FairStartFIFO, PowDifficulty: 10}
	}
	kc, err := o.endpoints.kafkaConn(cmd.ErrOrStderr(), nil)
	if err != nil {
		return err
	}
	rep, err := demo.Run(cmd.Context(), demo.Config{
		App: server.AppConfig{
			Server: server.DefaultConfig(), RedisURL: o.endpoints.redisURL, PostgresURL: o.endpoints.postgresURL,
			Kafka: kc, JWTSecret: []byte(defaultJWTSecret()),
		},
		Sale: sl, ItemID: o.items[0], Buyers: o.buyers, Conns: o.conns, Settle: 60 * time.Second, Room: room,
	}, progress, log)
	if err != nil {
		return err
	}
	if err := writeReport(out, o.output, reportOf{rep, rep.Render}); err != nil {
		return err
	}
	if !rep.Passed {
		return invariantBroken(fmt.Errorf("%d invariant(s) broken", len(rep.Failures)))
	}
	return nil
}
