package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/reconcile"
)

type reconcileOptions struct {
	endpoints endpointFlags
	cfg       reconcile.Config
	output    string
}

func newReconcileCmd() *cobra.Command {
	var o reconcileOptions
	cmd := &cobra.Command{
		Use:   "reconcile --sale ID",
		Short: "Prove Redis, PostgreSQL and Kafka agree about a sale, and repair what is safe",
		Long: `Compare a sale's state in Redis (stock per shard, holds, buyer records, order records), PostgreSQL
(orders by status, sold) and Kafka (the order consumer's lag, dead letters), order by order:

  orphaned hold          a Redis hold whose order is closed in PostgreSQL, or was never recorded
  unsettled hold         a Redis hold of an order PostgreSQL says is paid
  missing hold           a pending order whose Redis hold is gone (its unit could never come back)
  buyer without order    a Redis buyer slot or sold unit that no live order stands behind
  order without buyer    a live order Redis knows nothing about (its unit still on sale there)
  duplicate live orders  a buyer with more live orders than the per-user limit
  oversold, sold counter, units lost or doubled (stock + holds = quantity − paid), negative shard

Orders on their way through Kafka (consumer lag, or younger than --orphan-age) count as in flight,
not as lost, and the unit count waits for them; a finding must show in two consecutive reads. So
reconcile may run during a sale without disturbing it (it only reads, with HSCAN/ZSCAN pages).

--fix repairs what is safe and explains each change: release an orphaned hold, settle a paid one,
put a lost hold or an unknown order back, clear empty buyer slots, re-publish a never-recorded
reservation, recount sold, and move a counter by the units still missing once all else agrees.
Oversell and duplicate orders are left to a person. --rebuild-redis restores the sale's Redis state
from PostgreSQL after Redis lost it: it waits for Kafka to drain, pauses, preloads quantity − sold,
restores every live order, and resumes.

Exit status: 0 consistent, 1 a violation (or reconcile could not run).`,
		Example: `  fsctl reconcile --sale black-friday
  fsctl reconcile --sale black-friday --fix
  fsctl reconcile --sale black-friday --rebuild-redis      # after Redis restarted empty
  fsctl reconcile --sale black-friday -o json | jq '.items[].findings'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReconcile(cmd, o) },
	}
	f := cmd.Flags()
	o.endpoints.bind(f, true)
	c := &o.cfg
	f.StringVar(&c.SaleID, "sale", "", "sale to reconcile (required)")
	f.BoolVar(&c.Fix, "fix", false, "repair what is safe to repair, explaining each change")
	f.BoolVar(&c.RebuildRedis, "rebuild-redis", false, "restore the sale's Redis state from PostgreSQL (after Redis lost it)")
	f.StringVar(&c.OrdersTopic, "orders-topic", "", "orders topic (default the server's)")
	f.StringVar(&c.DeadLetterTopic, "dead-letter-topic", "", "dead-letter topic (default the server's)")
	f.StringVar(&c.ConsumerGroup, "consumer-group", reconcile.DefaultConsumerGroup, "the order consumer's group")
	f.DurationVar(&c.DrainTimeout, "drain-timeout", time.Minute, "how long --rebuild-redis waits for Kafka to drain")
	f.DurationVar(&c.OrphanAge, "orphan-age", 30*time.Second, "age after which a hold without an order is orphaned, not in flight")
	f.DurationVar(&c.Timeout, "timeout", 5*time.Second, "timeout of each network call")
	f.StringVarP(&o.output, "output", "o", "table", "table or json")
	_ = cmd.MarkFlagRequired("sale")
	return cmd
}

func runReconcile(cmd *cobra.Command, o reconcileOptions) error {
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("--output %q: want table or json", o.output)
	}
	cfg := o.cfg
	cfg.RedisURL, cfg.PostgresURL, cfg.Brokers = o.endpoints.redisURL, o.endpoints.postgresURL, o.endpoints.brokers
	cfg.Progress = cmd.ErrOrStderr()
	rep, err := reconcile.Run(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		err = rep.WriteJSON(out)
	} else {
		err = rep.Render(out)
	}
	switch {
	case err != nil:
		return err
	case !rep.OK():
		return &exitError{code: 1, err: fmt.Errorf("sale %s: Redis, PostgreSQL and Kafka disagree", cfg.SaleID)}
	}
	return nil
}
