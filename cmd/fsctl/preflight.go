package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/preflight"
)

// envServers is the old name of FSCTL_TARGET for the checkout instances, comma separated.
const envServers = "FSCTL_SERVERS"

// defaultMaxSkew is the clock difference blast and preflight allow between this machine and the
// checkout: a release synchronised to the server's clock is off by as much.
const defaultMaxSkew = 250 * time.Millisecond

type preflightOptions struct {
	endpoints endpointFlags
	profile   profileFlag
	cfg       preflight.Config
	output    outputFlag
	strict    bool
}

func newPreflightCmd() *cobra.Command {
	var o preflightOptions
	cmd := &cobra.Command{
		Use:   "preflight --sale ID [--profile FILE]",
		Short: "Check that everything is ready for a sale to open, and say exactly what is not",
		Long: `Run the pre-sale checklist against PostgreSQL, Redis, Kafka and the checkout servers:

  schema    migrations at the latest version; CHECK (sold <= quantity) and the live-order index
  sale      exists, valid, opens in the future (or is open), hold TTL above --payment-timeout
  stock     every item's counter on every shard equals quantity - sold - holds in flight;
            each shard's keys share one hash slot; holds have buyer records
  redis     maxmemory-policy cannot evict the stock; persistence; replicas (vs the sale's WAIT);
            scripts cached (SCRIPT EXISTS); round trip
  kafka     orders and dead-letter topics with leaders; replication and min.insync.replicas;
            the order consumer group running, and its lag
  servers   each --target's /readyz, one version everywhere, its view of the sale = PostgreSQL's
  clocks    this machine vs each server, Redis TIME and PostgreSQL now(), within --max-skew
  capacity  the room's admission rate below the throughput of a fsctl blast report
  controls  no kill switch thrown; sale and room paused only with --expect-paused

  profile   the target profile fits the live target: every query runs and returns sane values
            (sql.items, per item sql.item, sql.live, sql.paid, sql.shards, sql.userOrders,
            sql.liveBuyers), the purchase template renders and a buyer's token can be minted

Every target is read through its profile, the bundled server's (profiles/fsctl.yaml) included.
With --profile naming a checkout fsctl did not write (not deep), only what the profile declares
is checked: schema gives way to the profile group; stock reads the profile's keys (each counter an
integer >= 0, their sum = quantity - live orders, a shard's keys in one hash slot, buyers a set or
hash); kafka checks the profile's topic and group, if it declares one; servers GET http.health;
clocks read its sale page's serverTime, else its health endpoint's Date header; sale, capacity,
controls and the script cache are skipped (they are fsctl serve's). --sale is then optional (the
profile's ${sale}), and --fix repairs only what the profile declares (fix.stock: recount sets a
missing counter of an unsharded item to quantity - live).

Every probe has a timeout (--timeout), so a service that is down is a failed check naming its
address, never a hang. --fix applies only repairs that cannot hurt — preload missing stock
counters (or reload an item nothing was sold of), load the scripts, create the topics — says
what it did and checks again.

Exit status: 0 ready; 3 not ready (a check failed, or warned with --strict); 1 preflight could not
run; 2 a bad flag.`,
		Example: `  fsctl preflight --sale black-friday
  fsctl preflight --sale black-friday --target http://10.0.0.5:8080 --target http://10.0.0.6:8080
  fsctl preflight --sale black-friday --fix
  fsctl preflight --profile profiles/spring-article.yaml --target http://shop:8080 --item 1001
  fsctl preflight --sale black-friday --file examples/sale.yaml --capacity-report blast.json --strict -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPreflight(cmd, o) },
	}
	f := cmd.Flags()
	o.endpoints.bind(f, true)
	o.profile.bind(f)
	c := &o.cfg
	bindSale(f, &c.SaleID, "sale to check (required unless the --profile is a foreign target's)")
	bindItems(f, &c.Items, "check only this item (default every item sql.items returns)")
	bindTargets(f, &c.Servers, []string{"http://127.0.0.1:8080"}, "base URL of a checkout instance")
	f.StringVarP(&c.SaleFile, "file", "f", "", "sale file the stored sale must match")
	addressString(f, &c.RoomRedisURL, "room-redis-url", os.Getenv(envRoomRedisURL), "Redis of the waiting rooms when not --redis-url (env "+envRoomRedisURL+")")
	f.StringVar(&c.OrdersTopic, "orders-topic", "", "orders topic (default the server's)")
	f.StringVar(&c.DeadLetterTopic, "dead-letter-topic", "", "dead-letter topic (default the server's)")
	f.StringVar(&c.ConsumerGroup, "consumer-group", "", "the order consumer's group (default the server's "+preflight.DefaultConsumerGroup+", or the profile's kafka.group)")
	f.IntVar(&c.Partitions, "partitions", 6, "partitions of the orders topic when --fix creates it")
	f.StringVar(&c.SwitchesKey, "switches-key", "", "Redis hash of the kill switches (default the server's)")
	f.DurationVar(&c.PaymentTimeout, "payment-timeout", 0, "the servers' --payment-timeout (default the server's default)")
	f.StringVar(&c.CapacityReport, "capacity-report", "", "fsctl blast --output json report whose throughput the admission rate must stay below")
	f.DurationVar(&c.MaxSkew, "max-skew", defaultMaxSkew, "largest clock difference allowed between the instances and this machine")
	f.DurationVar(&c.MaxRedisRTT, "max-redis-rtt", 5*time.Millisecond, "Redis round trip above which it warns (the fastest of 5 pings: the distance, not the load)")
	f.BoolVar(&c.ExpectPaused, "expect-paused", false, "the sale (and its room) should be paused, to be opened by hand")
	f.BoolVar(&c.Fix, "fix", false, "apply the safe fixes, then check again")
	f.DurationVar(&c.Timeout, "timeout", 1500*time.Millisecond, "bound on each probe (the probes of one group run together, within it)")
	f.BoolVar(&o.strict, "strict", false, "fail on warnings too")
	bindOutput(f, &o.output, "the report")
	return cmd
}

func runPreflight(cmd *cobra.Command, o preflightOptions) error {
	if o.cfg.Timeout <= 0 || o.cfg.MaxSkew <= 0 {
		return errors.New("--timeout and --max-skew must be positive")
	}
	prof, err := o.profile.load()
	if err != nil {
		return err
	}
	cfg := o.cfg
	cfg.Profile = prof
	if err := cfg.Validate(); err != nil {
		return usageError(err)
	}
	// The bundled server's secret, as serve reads it, so the profile check mints a real token.
	cfg.TokenSecret = prof.SecretOverride(defaultJWTSecret(), false)
	if cfg.Kafka, err = o.endpoints.kafkaConn(cmd.ErrOrStderr(), prof); err != nil {
		return err
	}
	cfg.RedisURL, cfg.PostgresURL = o.endpoints.redisURL, o.endpoints.postgresURL
	if cfg.Fix {
		announceChange(cmd.ErrOrStderr(), "preflight: checking, then applying the safe fixes to sale "+cfg.SaleID+" and checking again,",
			cfg.RedisURL, cfg.PostgresURL)
	}
	rep, err := preflight.Run(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	err = writeReport(cmd.OutOrStdout(), o.output, strictReport{rep, o.strict})
	switch {
	case err != nil:
		return err
	case !rep.Ready(o.strict):
		return checkFailed(fmt.Errorf("sale %s (profile %s) is not ready: %d failed, %d warnings", cfg.SaleID, prof.Name, rep.Count(finding.Fail), rep.Count(finding.Warn)))
	}
	return nil
}

// strictReport is a preflight report as --strict judges it.
type strictReport struct {
	rep    preflight.Report
	strict bool
}

func (r strictReport) Render(w io.Writer) error    { return r.rep.Render(w, r.strict) }
func (r strictReport) WriteJSON(w io.Writer) error { return r.rep.WriteJSON(w, r.strict) }
