package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/blast"
)

// blastLong is blast's --help.
const blastLong = `Prepare --buyers virtual buyers (a signed token, an Idempotency-Key and a built request each),
dial and warm a pool of --conns connections, park every buyer, and release them all at one
wall-clock instant (--at, or --in from now). Every request is recorded with its intended release
time, the time it was written and answered; latency counts from the intended instant, so a buyer
who waited for a connection shows that wait. Answers are classified (RESERVED, SOLD_OUT, ...;
--classify overrides the profile's rules), then the invariants are checked: no item gives out
more reservations than its stock, no buyer more than the per-user limit, every try of one key
gets the same answer, and with --check-state (or an explicit --redis-url/--postgres-url) every
RESERVED order reaches PostgreSQL and Redis agrees with it.

--profile points blast at a checkout it did not write: the profile's purchase template (method,
URL, headers, body), its token (hs256, rs256, a token file whose users become the buyers, or
none) and its classification replace the bundled server's. The probe and warm-up GET its health
path (else "/"); the clock skew comes from its sale page, else the Date header. The stock and
per-user limit come from --stock/--limit, else its sale page, else its SQL through
--postgres-url; --check-state reads its Redis keys and SQL (every RESERVED buyer has a live
order, no oversell, Redis stock + live orders == quantity). --room, --pay and --cancel need the
endpoints the profile declares (http.room, http.pay, http.order), as fsctl serve's (the default) does.

Buyers share the connection pool (over HTTP/1.1 requests queue per connection): the report says
how many requests each connection carried. Larger bursts than one process's open files allow are
split with --shard i/n over processes given the same --at.

--room sends each buyer through the waiting room first; --pay/--cancel make reserved buyers pay or
cancel (seeded by --seed, the rest abandon the hold); --rate 500/s (with --ramp, --duration) is the
open model: buyers arrive on a schedule, each timed from its own intended instant. Before the
release blast compares its clock with the server's and refuses beyond --max-skew.

An https:// target is checked against the system's authorities; --cacert FILE trusts a private
CA instead, --server-name NAME checks (and sends in SNI) another name than the URL's host,
--cert FILE --key FILE present a client certificate, and --insecure skips the check (tests only:
a warning says so). --http picks the HTTP version of the http engine: auto (the default) offers
h2 and HTTP/1.1 to an https:// target and speaks what its TLS handshake (ALPN) picks, and speaks
HTTP/1.1 to an http:// one; 2 speaks HTTP/2 only, h2 over TLS and h2c (prior knowledge) in plain
text, as fsctl serve does; 1.1 never offers h2. Over HTTP/2 the buyers' requests are streams
multiplexed over a few connections. The report's connections line names the protocol the
answers came over (h2, h2c, HTTP/1.1, HTTP/1.1 over TLS).

--reveal follows a sale that hides its purchase route until the opening (fsctl serve's sale option
reveal: {enabled: true}): at the release each buyer asks GET /api/v1/sales/SALE/items/ITEM/purchase-path
for its own signed, short-lived path and POSTs the purchase there; a purchase answered 403 (the path
expired) fetches a new path once and tries again. auto (the default) does so when the sale page
says "reveal": true; on always does (a sale without reveal names its plain route); off fires at the
plain route, which a reveal sale refuses with 403 (CLIENT_ERROR in the report): what a script that
ignores the reveal gets. The path is known only at the release, so the raw engine cannot follow it:
auto picks http and says why, and --engine raw is refused.

--engine auto (the default) sends a direct purchase to an http:// target with the raw engine,
the fastest release, and anything raw cannot send (--retries, --replays, --room, --pay/--cancel, --poll-order,
https://, --http 2, a profile whose purchase URL is a whole URL) with net/http; --timeout 0 (the default)
sizes each request's bound to the burst, 10s + 1s per 2,000 clicks. The report's engine line says
which engine and timeout produced the numbers, and why auto did not pick raw.

--refreshes 10 is the read side of a sale: every buyer also loads the sale page (fsctl serve's
cached read model, GET /api/v1/sales/SALE; another target's profile http.salePage) 10 times,
evenly over the --refresh-window (10s) that ends at the release, revalidating with the page's ETag
as a browser does (200 or 304); --refreshes-after N adds loads after it, --refreshers 0.5 makes only
half the buyers refresh. The reads go over their own pool (--read-conns), on either engine, so the
purchases still leave at one instant on their own connections; the report gives the reads a table
of their own (latency from each load's slot, by status) beside the purchases' numbers, which are
what the invariants judge. Without --in or --at the release waits until the window fits. --poll-order
makes every RESERVED buyer poll GET /api/v1/orders/ID every --poll-interval until it says persisted
(in PostgreSQL) or --poll-wait passes; the report gives the time from the 202 to persisted (p50,
p99, p99.9, max) and the orders never persisted. Polling needs the http engine: auto picks it and
says why.

--metrics-remote-write URL pushes the burst's numbers while it runs (every --metrics-interval, and
once more after the last answer) to a Prometheus remote-write receiver, so the burst and the
server show on one dashboard: fsctl_blast_requests_total{outcome}, the latency histogram
fsctl_blast_request_duration_seconds, fsctl_blast_in_flight and fsctl_blast_buyers, each labelled
job="fsctl-blast", burst (the release instant, the same in every shard) and shard. Answers are
counted as they come, on either engine. A failed push is warned about once and counted in the
report; it never fails the burst.

Exit status: 0 all good, 1 could not run, 2 a bad flag, 3 a threshold missed (--max-p99,
--min-throughput, --expect-sold), 4 an invariant broken.`

// blastExample is what blast's --help shows it doing.
const blastExample = `  fsctl sale create -f examples/sale.yaml --reset
  fsctl blast --sale black-friday --item console --buyers 5000
    engine: raw (auto); request timeout 12.5s (auto: 10s + 1s per 2000 clicks)
    ┌──────────┬──────────┬────────┬─────────┬────────┬────────┬────────┬──────────┬───────────┬────────┐
    │ OUTCOME  │ REQUESTS │ MIN MS │ MEAN MS │ P50 MS │ P90 MS │ P99 MS │ P99.9 MS │ P99.99 MS │ MAX MS │
    ├──────────┼──────────┼────────┼─────────┼────────┼────────┼────────┼──────────┼───────────┼────────┤
    │ RESERVED │ 100      │ 32.3   │ 47.8    │ 47.6   │ 53.5   │ 56.4   │ 61.2     │ 61.2      │ 61.2   │
    │ SOLD_OUT │ 4900     │ 21.1   │ 166.8   │ 172.3  │ 259.7  │ 291.8  │ 292.6    │ 292.6     │ 292.6  │
    │ all      │ 5000     │ 21.1   │ 164.4   │ 168.8  │ 259.7  │ 291.8  │ 292.6    │ 292.6     │ 292.6  │
    └──────────┴──────────┴────────┴─────────┴────────┴────────┴────────┴──────────┴───────────┴────────┘
    buyers 5000, requests 5000, sold 100; 17094 req/s over 292.5ms from the release (latency counts from the intended instant)
    release: barrier opened 0.001ms late (prepared in 126ms); buyers woke p50 2.2ms p99 7.9ms max 8.2ms after it
    written - intended (includes the wait for a pooled connection): p50 2.2ms p99 7.9ms max 8.2ms
    sold out: first SOLD_OUT after the last RESERVED at 61.1ms
    connections: pool of 256 HTTP/1.1 connections, 256 used, 19.5 requests per connection (max 20) - not one socket per buyer
    invariant OK      no oversell (responses)
    invariant OK      per-user limit (responses)
    invariant OK      same key, same answer

  fsctl blast --item black-friday:console --item black-friday:controller --buyers 20000 --clicks 2 --retries 3
  fsctl blast --sale black-friday --item console --buyers 5000 --expect-sold 100 --max-p99 2s --output json
  fsctl blast --target https://shop.example --sale bf --item 1001 --classify examples/classify.yaml --stock 100 --limit 1
  fsctl blast --profile profiles/spring-article.yaml --target http://127.0.0.1:8090 --sale article --item 1001 --buyers 2000 --check-state`

func newBlastCmd(sub ...*cobra.Command) *cobra.Command {
	var o blastOptions
	cmd := &cobra.Command{
		Use:     "blast",
		Short:   "Release a synchronized burst of prepared buyers at a sale and check it did not oversell",
		Long:    blastLong,
		Example: blastExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("redis-url") || cmd.Flags().Changed("postgres-url") {
				o.checkState = true
			}
			o.reads.inGiven = cmd.Flags().Changed("in")
			return runBlast(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	o.bindTargetFlags(f)
	o.bindBurstFlags(f)
	o.bindVerdictFlags(f)
	o.bindJourneyFlags(f)
	o.bindClientFlags(f)
	o.metrics.bind(f)
	o.reads.bind(f)
	cmd.AddCommand(sub...)
	return cmd
}

func runBlast(ctx context.Context, out, progress io.Writer, o blastOptions) error {
	prof, err := o.profile.load()
	if err != nil {
		return err
	}
	b, err := blast.Prepare(o.options(prof), time.Now())
	if err != nil {
		return blastError(err) // a classification file's error keeps the status exitCode gives it
	}
	if b.Metrics, err = o.metrics.remoteWrite(); err != nil {
		return usageError(err)
	}
	if o.tls.Insecure {
		fmt.Fprintln(progress, "warning: --insecure: the target's certificate is not verified; anyone on the path can read and change the traffic")
	}
	if err := b.Arm(); err != nil {
		return blastError(err)
	}
	rep, err := blast.Fire(ctx, b, progress)
	if err != nil {
		return err
	}
	err = writeReport(out, o.output, rep.Summary)
	if err == nil {
		// Under --output json the journey goes to stderr, so stdout stays JSON.
		err = rep.RenderJourney(o.output.beside(out, progress))
	}
	switch {
	case err != nil:
		return err
	case rep.Broken():
		return invariantBroken(errors.New("invariant broken: see the report"))
	case rep.Missed():
		return checkFailed(fmt.Errorf("threshold missed: %s", strings.Join(rep.Summary.Failures, "; ")))
	}
	return nil
}

// blastError makes a burst the flags describe wrongly (a *blast.FlagError) a usage error.
func blastError(err error) error {
	if _, bad := errors.AsType[*blast.FlagError](err); bad {
		return usageError(err)
	}
	return err
}
