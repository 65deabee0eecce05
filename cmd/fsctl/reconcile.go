package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/reconcile"
)

type reconcileOptions struct {
	endpoints endpointFlags
	profile   profileFlag
	cfg       reconcile.Config
	output    outputFlag
}

func newReconcileCmd() *cobra.Command {
	var o reconcileOptions
	cmd := &cobra.Command{
		Use:   "reconcile --sale ID",
		Short: "Prove Redis, PostgreSQL and Kafka agree about a sale, and repair what is safe",
		Long: `Compare a sale's state in Redis and PostgreSQL, and the order log in Kafka (the order consumer's
lag, dead letters). Every checkout is read through its target profile (--profile; fsctl serve's
by default): per item, oversold (live orders or sold above quantity), a negative or missing stock
key, the sold counter against the live orders, and stock + holds = quantity − paid (stock + live
orders = quantity where the profile declares no holds): units lost or doubled. Where the profile
declares redis.buyers and sql.liveBuyers in units, buyers without an order and orders without a
buyer too.

fsctl serve is also compared order by order (holds, buyer slots, order records):

  orphaned hold          a Redis hold whose order is closed in PostgreSQL, or was never recorded
  unsettled hold         a Redis hold of an order PostgreSQL says is paid
  missing hold           a pending order whose Redis hold is gone (its unit could never come back)
  buyer without order    a Redis buyer slot or sold unit that no live order stands behind
  order without buyer    a live order Redis knows nothing about (its unit still on sale there)
  duplicate live orders  a buyer with more live orders than the per-user limit

Orders on their way through Kafka (consumer lag, or younger than --orphan-age) count as in flight,
not as lost, and the unit count waits for them; a finding must show in two reads --confirm-after
apart. So reconcile may run during a sale without disturbing it (it only reads, with HSCAN/ZSCAN
pages).

--fix repairs what is safe and explains each change. It runs the fixes the profile declares
(fix.sold, fix.stock: recount, fix.buyers: recount; any other finding says the profile declares no
fix for it) and, on fsctl serve, releases an orphaned hold, settles a paid one, puts a lost hold
or an unknown order back, clears empty buyer slots, re-publishes a never-recorded reservation, and
moves a counter by the units still missing once all else agrees. Oversell and duplicate orders are
left to a person. --rebuild-redis (fsctl serve only) restores the sale's Redis state from
PostgreSQL after Redis lost it: it pauses the sale and wipes its keys, records the order log in
PostgreSQL itself (from the consumer group's position, so a stalled group does not hold it up),
bumps each item's epoch (a hand-off that lands later is dropped as stale, and its buyer was told to
retry), preloads quantity − sold, restores every live order, and resumes.

Exit status: 0 consistent, 4 a violation (the stores disagree), 1 reconcile could not run, 2 a bad
flag.`,
		Example: `  fsctl reconcile --sale black-friday
  fsctl reconcile --sale black-friday --fix
  fsctl reconcile --sale black-friday --rebuild-redis      # after Redis restarted empty
  fsctl reconcile --sale black-friday -o json | jq '.items[].findings'
  fsctl reconcile --profile profiles/spring-article.yaml --sale article
  fsctl reconcile --profile profiles/spring-article.yaml --sale article --item 42 --fix`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReconcile(cmd, o) },
	}
	f := cmd.Flags()
	o.endpoints.bind(f, true)
	o.profile.bind(f)
	c := &o.cfg
	bindSale(f, &c.SaleID, "sale to reconcile (required)")
	f.BoolVar(&c.Fix, "fix", false, "repair what is safe to repair, explaining each change")
	f.BoolVar(&c.RebuildRedis, "rebuild-redis", false, "restore the sale's Redis state from PostgreSQL (after Redis lost it)")
	f.StringVar(&c.OrdersTopic, "orders-topic", "", "orders topic (default the profile's kafka.topic)")
	f.StringVar(&c.DeadLetterTopic, "dead-letter-topic", "", "dead-letter topic (default the profile's kafka.deadLetter)")
	f.StringVar(&c.ConsumerGroup, "consumer-group", "", "the order consumer's group (default the profile's kafka.group: the server's "+reconcile.DefaultConsumerGroup+")")
	f.DurationVar(&c.DrainTimeout, "drain-timeout", time.Minute, "how long --rebuild-redis keeps trying to record the order log in PostgreSQL (Kafka or PostgreSQL down)")
	f.DurationVar(&c.OrphanAge, "orphan-age", 30*time.Second, "age after which a hold without an order is orphaned, not in flight")
	f.DurationVar(&c.Timeout, "timeout", 5*time.Second, "timeout of each network call")
	bindItems(f, &c.Items, "reconcile only this item (default every item of the sale)")
	f.DurationVar(&c.Confirm, "confirm-after", 500*time.Millisecond, "pause between the two reads a finding must show in")
	bindOutput(f, &o.output, "the report")
	_ = cmd.MarkFlagRequired("sale")
	return cmd
}

func runReconcile(cmd *cobra.Command, o reconcileOptions) error {
	p, err := o.profile.load()
	if err != nil {
		return err
	}
	cfg := o.cfg
	cfg.Profile = p
	if cfg.Kafka, err = o.endpoints.kafkaConn(cmd.ErrOrStderr(), p); err != nil {
		return err
	}
	cfg.RedisURL, cfg.PostgresURL = o.endpoints.redisURL, o.endpoints.postgresURL
	cfg.Progress = cmd.ErrOrStderr()
	if err := cfg.Validate(); err != nil {
		return usageError(err)
	}
	switch {
	case cfg.RebuildRedis:
		announceChange(cfg.Progress, "rebuilding sale "+cfg.SaleID+"'s Redis state from PostgreSQL", cfg.RedisURL, cfg.PostgresURL)
	case cfg.Fix:
		announceChange(cfg.Progress, "repairing sale "+cfg.SaleID, cfg.RedisURL, cfg.PostgresURL)
	}
	rep, err := reconcile.Run(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	err = writeReport(out, o.output, rep)
	switch {
	case err != nil:
		return err
	case !rep.OK():
		return invariantBroken(fmt.Errorf("sale %s: Redis, PostgreSQL and Kafka disagree", o.cfg.SaleID))
	}
	return nil
}
