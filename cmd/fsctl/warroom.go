package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/warroom"
)

type warroomOptions struct {
	endpoints  endpointFlags
	profile    profileFlag
	wr         warroom.Endpoints
	alerts     string
	once       bool
	output     outputFlag
	record     string
	interval   time.Duration
	window     time.Duration
	timeout    time.Duration
	slowEvery  int
	failOn     string
	noRedis    bool
	noPostgres bool
	noKafka    bool
}

func newWarroomCmd() *cobra.Command {
	var o warroomOptions
	cmd := &cobra.Command{
		Use:   "warroom --sale ID",
		Short: "Watch a sale live: stock, traffic, admission, pipeline, payment and alerts on one screen",
		Long: `The live dashboard of the sale window. It reads the servers' /metrics and Kafka's offsets every
--interval (250ms), and Redis's counters (plain reads, no scripts), PostgreSQL's order counts and
the admin API's state once a second, so it never loads the reservation path.

Panels: items (remaining / held / paid, sell-through velocity, time to sold out), traffic
(outcomes per second, latency p50/p99), admission (queue, rate, active buyers, wait), pipeline
(consumer lag per partition, orders by status, Redis vs PostgreSQL drift, dead letters), payment
(breaker, decline and error rates), alerts from --alerts (docs/warroom.md) with an event log.
Operator actions (pause/resume the sale or admission, the admission rate, kill switches) go
through the first --target's /admin/v1 API with --admin-token, each after a y/n confirmation.

A source counts as down once it missed 3 probes in a row (an error, or no answer within
--timeout): a fast source within 3 × --interval, a slow one within 3 × --slow-every ticks. Until
then it is late (◐): its panel keeps the last answer and no sources_down alert fires, so a source
that answers slowly once on a loaded box does not cry wolf. A source that is down shows DOWN on
its panel and the dashboard goes on; one that is not configured (--no-redis, no --admin-token,
...) shows "not available" with the reason. --once reads each source once: a miss is DOWN.

With the --profile of another checkout (not fsctl serve), it reads only what the profile
declares: items (stock left over the shards, buyers, holds) through its Redis key templates and
sql.items/sql.item; orders (sold, live, paid) through its queries, with drift = Redis's
quantity - stock against the live orders; Kafka lag when it names kafka.topic and kafka.group;
traffic, admission and payment only with http.metrics, the control panel only with http.admin.
The rest shows "not available" with the reason, never DOWN. When stdout is not a
terminal, or with --once, it prints one snapshot (rates over --window) as a table or JSON,
and exits 3 when a critical alert fires (--fail-on crit, the default), so a CI gate fails
during an outage without being told to: --fail-on warn fails on warnings too, --fail-on none
never fails. The live dashboard never exits on an alert.
--records appends every snapshot as a JSON line, the timeline of a game day.`,
		Example: `  fsctl warroom --sale black-friday --admin-token $FSCTL_ADMIN_TOKEN
  fsctl warroom --sale black-friday --target http://10.0.0.5:8080 --target http://10.0.0.6:8080 --alerts examples/warroom-alerts.yaml
  fsctl warroom --sale black-friday --records gameday.jsonl
  fsctl warroom --sale black-friday --once --output json
  fsctl warroom --sale black-friday --once                  # CI: exit 3 on a critical alert
  fsctl warroom --sale black-friday --once --fail-on none   # print the snapshot, never fail
  fsctl warroom --sale article --profile profiles/spring-article.yaml --once`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWarroom(cmd, o) },
	}
	f := cmd.Flags()
	o.endpoints.bind(f, true)
	o.profile.bind(f)
	bindItems(f, &o.wr.Items, "an item to watch (default every item the profile's sql.items returns)")
	bindSale(f, &o.wr.Sale, "sale to watch (required)")
	bindTargets(f, &o.wr.Servers, []string{"http://127.0.0.1:8080"}, "base URL of a checkout instance")
	secretString(f, &o.wr.AdminToken, "admin-token", envAdminToken, "operator token for the control panel and actions")
	f.StringVar(&o.wr.OrdersTopic, "orders-topic", "", "orders topic (default the server's)")
	f.StringVar(&o.wr.DeadLetterTopic, "dead-letter-topic", "", "dead-letter topic (default the server's)")
	f.StringVar(&o.wr.ConsumerGroup, "consumer-group", "", "the order consumer's group (default the server's)")
	f.BoolVar(&o.noRedis, "no-redis", false, "the target has no Redis to read (items panel not available)")
	f.BoolVar(&o.noPostgres, "no-postgres", false, "the target has no PostgreSQL to read")
	f.BoolVar(&o.noKafka, "no-kafka", false, "the target has no Kafka to read")
	f.StringVar(&o.alerts, "alerts", "", "alert thresholds file (YAML; default the built-in rules, see examples/warroom-alerts.yaml)")
	f.BoolVar(&o.once, "once", false, "print one snapshot and exit")
	bindOutput(f, &o.output, "the snapshot with --once")
	f.StringVar(&o.record, "records", "", "append every snapshot to this file as JSON lines")
	deprecatedAlias(f, "record", "records") // JSON lines are --records, as blast writes them
	f.DurationVar(&o.interval, "interval", warroom.DefaultInterval, "refresh interval of the fast sources (metrics, Kafka)")
	f.IntVar(&o.slowEvery, "slow-every", warroom.DefaultSlowEvery, "read Redis, PostgreSQL and the admin API every N refreshes")
	f.DurationVar(&o.window, "window", time.Second, "with --once: the window rates are measured over (0: cumulative only)")
	f.DurationVar(&o.timeout, "timeout", warroom.DefaultProbeTimeout, "timeout of each source's probe: a probe that takes longer missed (a source is down after 3 misses in a row)")
	// crit by default: a gate that forgot the flag must not pass while every source is down
	f.StringVar(&o.failOn, "fail-on", warroom.Crit, "with --once: exit 3 when an alert of this level or worse fires (warn, crit); none never fails")
	_ = cmd.MarkFlagRequired("sale")
	return cmd
}

func runWarroom(cmd *cobra.Command, o warroomOptions) error {
	if err := warroom.CheckSettings(o.failOn, o.interval, o.timeout, o.slowEvery); err != nil {
		return usageError(err)
	}
	alerts := warroom.DefaultAlerts()
	if o.alerts != "" {
		var err error
		if alerts, err = warroom.LoadAlerts(o.alerts); err != nil {
			return err // exitCode tells a file that cannot be read from one that is wrong
		}
	}
	prof, err := o.profile.load()
	if err != nil {
		return err
	}
	e := o.wr
	e.Profile = prof
	if e.Kafka, err = o.endpoints.kafkaConn(cmd.ErrOrStderr(), prof); err != nil {
		return err
	}
	e.RedisURL, e.PostgresURL = o.endpoints.redisURL, o.endpoints.postgresURL
	if o.noRedis {
		e.RedisURL = ""
	}
	if o.noPostgres {
		e.PostgresURL = ""
	}
	if o.noKafka {
		e.Kafka.Brokers = nil
	}
	src, closeSources, err := warroom.Open(e)
	if err != nil {
		return err
	}
	defer closeSources()
	var record func(warroom.Snapshot) error
	if o.record != "" {
		var closeRecords func() error
		if record, closeRecords, err = warroom.OpenRecords(o.record); err != nil {
			return err
		}
		defer func() { _ = closeRecords() }() // a write that failed was reported by the recording
	}
	out := cmd.OutOrStdout()
	ctx := cmd.Context()
	if o.once || !isTerminal(out) {
		s := warroom.Once(ctx, src, alerts, o.window, warroom.CollectOptions{Timeout: o.timeout})
		if record != nil {
			if err := record(s); err != nil {
				return err
			}
		}
		if err := writeReport(out, o.output, snapshotReport{&s}); err != nil {
			return err
		}
		return failOn(s.Alerts, o.failOn)
	}
	m := warroom.New(warroom.Options{Sources: src, Alerts: alerts, Interval: o.interval, SlowEvery: o.slowEvery,
		Timeout: o.timeout, Record: record, Context: ctx})
	_, err = tea.NewProgram(m, tea.WithContext(ctx), tea.WithOutput(out)).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // interrupted: a normal way to leave
	}
	return err
}

// failOn turns firing alerts at level (or worse) into exit status 3, for CI and scripts.
func failOn(alerts []warroom.Alert, level string) error {
	if firing := warroom.Firing(alerts, level); len(firing) > 0 {
		return checkFailed(fmt.Errorf("alerts firing: %s", strings.Join(firing, "; ")))
	}
	return nil
}

// snapshotReport is one snapshot as --once prints it: the table, or the snapshot as indented JSON.
type snapshotReport struct{ s *warroom.Snapshot }

func (r snapshotReport) Render(w io.Writer) error { return warroom.WriteTable(w, r.s) }

func (r snapshotReport) WriteJSON(w io.Writer) error { return warroom.WriteJSON(w, r.s) }

// isTerminal reports whether w is a terminal the dashboard can draw on.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}
