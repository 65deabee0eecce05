package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/profile"
)

type blastOptions struct {
	endpoints     endpointFlags
	profile       profileFlag
	prof          *profile.Profile // the loaded --profile; nil is the bundled server's
	checkState    bool
	target        string
	sale          string
	items         []string
	buyers        int
	conns         int
	clicks        int
	retries       int
	replays       int
	at            string
	in            time.Duration
	timeout       time.Duration
	shard         string
	secret        jwtSecretFlag
	prefix        string
	classify      string
	results       string
	records       string
	html          string
	output        outputFlag
	stock         int64
	limit         int
	maxP99        time.Duration
	minThroughput float64
	expectSold    int
	settle        time.Duration
	room          bool
	maxPoll       time.Duration
	roomWait      time.Duration
	reveal        string
	pay, cancel   float64
	seed          uint64
	rate          float64
	ramp          time.Duration
	duration      time.Duration
	maxSkew       time.Duration
	engine        string
	http          string
	tls           loadgen.TLSFiles
	tokens        string
	metrics       metricsFlags
	reads         readFlags
}

func newBlastCmd(sub ...*cobra.Command) *cobra.Command {
	var o blastOptions
	cmd := &cobra.Command{
		Use:   "blast",
		Short: "Release a synchronized burst of prepared buyers at a sale and check it did not oversell",
		Long: `Prepare --buyers virtual buyers (a signed token, an Idempotency-Key and a built request each),
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
order, no oversell, Redis stock + live orders == quantity). --room, --pay and --cancel use fsctl
serve's own endpoints and need its profile (the default).

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
--min-throughput, --expect-sold), 4 an invariant broken.`,
		Example: `  fsctl sale create -f examples/sale.yaml --reset
  fsctl blast --sale black-friday --item console --buyers 5000
    engine: raw (auto); request timeout 12.5s (auto: 10s + 1s per 2000 clicks)
    ┌──────────┬──────────┬─────────┬─────────┬─────────┬────────┐
    │ OUTCOME  │ REQUESTS │ P 50 MS │ P 90 MS │ P 99 MS │ MAX MS │
    ├──────────┼──────────┼─────────┼─────────┼─────────┼────────┤
    │ RESERVED │ 100      │ 255.4   │ 266.8   │ 273.9   │ 274.2  │
    │ SOLD_OUT │ 4900     │ 650.2   │ 1045.5  │ 1109.0  │ 1111.0 │
    │ all      │ 5000     │ 638.5   │ 1040.4  │ 1109.0  │ 1111.0 │
    └──────────┴──────────┴─────────┴─────────┴─────────┴────────┘
    buyers 5000, requests 5000, sold 100; 4504 req/s over 1110.2ms from the release (latency counts from the intended instant)
    release: barrier opened 0.002ms late (prepared in 140ms); buyers woke p50 190.5ms p99 234.6ms max 235.5ms after it
    written - intended (includes the wait for a pooled connection): p50 602.1ms p99 1077.2ms max 1083.4ms
    sold out: first SOLD_OUT after the last RESERVED at 274.1ms
    connections: pool of 256 HTTP/1.1 connections, 256 used, 19.5 requests per connection (max 28) - not one socket per buyer
    invariant OK      no oversell (responses)
    invariant OK      per-user limit (responses)
    invariant OK      same key, same answer

  fsctl blast --item black-friday:console --item black-friday:controller --buyers 20000 --clicks 2 --retries 3
  fsctl blast --sale black-friday --item console --buyers 5000 --expect-sold 100 --max-p99 2s --output json
  fsctl blast --target https://shop.example --sale bf --item 1001 --classify examples/classify.yaml --stock 100 --limit 1
  fsctl blast --profile profiles/spring-article.yaml --target http://127.0.0.1:8090 --sale article --item 1001 --buyers 2000 --check-state`,
		Args: cobra.NoArgs,
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

// bindTargetFlags binds what the burst fires at: the checkout, its profile and its stores, the
// sale and its items.
func (o *blastOptions) bindTargetFlags(f *pflag.FlagSet) {
	o.endpoints.bind(f, false)
	o.profile.bind(f)
	f.BoolVar(&o.checkState, "check-state", false, "also check the server's Redis and PostgreSQL after the burst")
	bindTarget(f, &o.target, "http://127.0.0.1:8080", "base URL of the checkout")
	bindSale(f, &o.sale, "sale the --item flags belong to")
	bindItems(f, &o.items, "item buyers go for (ITEM with --sale, or SALE:ITEM); buyers are spread round-robin")
}

// bindBurstFlags binds the buyers, their connections and clicks, and the release instant.
func (o *blastOptions) bindBurstFlags(f *pflag.FlagSet) {
	f.IntVar(&o.buyers, "buyers", 1000, "virtual buyers in the whole burst (all shards)")
	f.IntVar(&o.conns, "conns", 256, "pre-dialled connections the buyers share")
	f.IntVar(&o.clicks, "clicks", 1, "clicks per buyer, released together, each with a new Idempotency-Key")
	f.IntVar(&o.retries, "retries", 0, "retries of a click with the same key after a timeout, transport error or 5xx")
	f.IntVar(&o.replays, "replays", 0, "resends of a click with the same key after its answer (must get the same answer)")
	f.StringVar(&o.at, "at", "", "release instant, RFC 3339 (e.g. 2026-11-27T09:00:00Z); overrides --in")
	f.DurationVar(&o.in, "in", 2*time.Second, "release this long from now")
	f.DurationVar(&o.timeout, "timeout", 0, "bound on one request, from when its buyer sends it; 0 = auto: 10s + 1s per 2,000 clicks (buyers x clicks, all shards), "+
		"e.g. 35s for 50,000 buyers, as if the target answers at least 2,000 requests/s (a slower one needs more)")
	f.StringVar(&o.shard, "shard", "0/1", "this process's part of the buyers, i/n: buyer k belongs to shard k mod n")
	o.secret.bind(f)
	f.StringVar(&o.prefix, "user-prefix", "blast-", "buyer k is the user <prefix><k>")
}

// bindVerdictFlags binds how the answers are classified, recorded and judged.
func (o *blastOptions) bindVerdictFlags(f *pflag.FlagSet) {
	f.StringVar(&o.classify, "classify", "", "classification rules (YAML, see examples/classify.yaml); default: the profile's")
	f.StringVar(&o.results, "results", "", "write every request to this file as vegeta results (vegeta report / plot read it)")
	f.StringVar(&o.records, "records", "", "write every request and the burst's header as JSON lines (fsctl blast merge reads them)")
	f.StringVar(&o.html, "html", "", "write the report with charts (latency and outcomes over time, stock depletion) to this HTML file")
	bindOutput(f, &o.output, "the report")
	f.Int64Var(&o.stock, "stock", -1, "units per item, for a target without the bundled sale page (with --limit)")
	f.IntVar(&o.limit, "limit", -1, "per-user limit, for a target without the bundled sale page (with --stock)")
	f.DurationVar(&o.maxP99, "max-p99", 0, "fail (exit 3) when the p99 latency is above this")
	f.Float64Var(&o.minThroughput, "min-throughput", 0, "fail (exit 3) below this many requests per second")
	f.IntVar(&o.expectSold, "expect-sold", -1, "fail (exit 3) unless exactly this many units were reserved")
	f.DurationVar(&o.settle, "settle", 30*time.Second, "with --check-state, how long to wait for orders to reach PostgreSQL")
}

// bindJourneyFlags binds what each buyer does around its purchase, and when buyers arrive.
func (o *blastOptions) bindJourneyFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.room, "room", false, "go through the waiting room: challenge, proof of work, queue, poll, then buy with the admission token")
	f.DurationVar(&o.maxPoll, "max-poll", time.Second, "with --room, the longest pause between polls whatever pollAfterSeconds says")
	f.DurationVar(&o.roomWait, "room-wait", 2*time.Minute, "with --room, give up (TIMEOUT) on a buyer not admitted this long after its intended time")
	f.StringVar(&o.reveal, "reveal", blast.RevealAuto, "buy through the purchase path the sale reveals at the opening (GET .../purchase-path, then POST to it): "+
		"auto (when fsctl serve's sale page says reveal: true), on (always) or off (fire at the plain purchase route, which a reveal sale refuses with 403); needs the http engine")
	f.Float64Var(&o.pay, "pay", 0, "probability that a reserved buyer pays (the rest of --pay and --cancel abandon the hold)")
	f.Float64Var(&o.cancel, "cancel", 0, "probability that a reserved buyer cancels")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the buyers' choices: pay/cancel/abandon, and who refreshes under --refreshers (the same seed picks the same buyers)")
	bindRate(f, &o.rate, "open model: release buyers at this rate from the release instant instead of all at once")
	f.DurationVar(&o.ramp, "ramp", 0, "with --rate, climb from 0 to the rate over this long first")
	f.DurationVar(&o.duration, "duration", 0, "with --rate, run this long: the buyers are as many as the schedule releases in it (instead of --buyers)")
}

// bindClientFlags binds how the requests leave: the clock check, the buyers' tokens, the engine,
// the HTTP version and TLS.
func (o *blastOptions) bindClientFlags(f *pflag.FlagSet) {
	f.DurationVar(&o.maxSkew, "max-skew", defaultMaxSkew, "largest clock difference allowed between this machine and the checkout: blast refuses to run beyond it (0: do not check)")
	f.StringVar(&o.tokens, "tokens", "", "buyers' tokens minted ahead (fsctl profile tokens), replacing the profile's token section: its users are the buyers")
	f.StringVar(&o.engine, "engine", loadgen.EngineAuto, "how requests are sent: auto (raw wherever the burst allows, else http; the report names the engine used and why), "+
		"http (net/http: every journey, --retries, --replays, --room, --pay/--cancel, --poll-order, https://) or raw (pre-built HTTP/1.1 bytes pipelined over raw connections: "+
		"the direct purchase to an http:// target only, fastest release; refused where it cannot run)")
	f.StringVar(&o.http, "http", loadgen.HTTPAuto, "HTTP version of the http engine: auto (h2 when an https:// target's TLS handshake offers it, else HTTP/1.1; "+
		"HTTP/1.1 to an http:// target), 2 (HTTP/2 only: h2 over TLS, h2c with prior knowledge over http://) or 1.1")
	f.StringVar(&o.tls.CACert, "cacert", "", "PEM file of the authorities an https:// target's certificate must chain to, instead of the system's (a private CA)")
	f.StringVar(&o.tls.Cert, "cert", "", "client certificate (PEM) for a target that asks for one, with --key")
	f.StringVar(&o.tls.Key, "key", "", "private key (PEM) of --cert")
	f.StringVar(&o.tls.ServerName, "server-name", "", "name to send in SNI and check the target's certificate against, instead of the --target host")
	f.BoolVar(&o.tls.Insecure, "insecure", false, "do not verify the target's certificate (tests against a throwaway certificate only; prints a warning)")
}

// plan turns the flags into a burst plan against the target the profile describes, or a usage error.
func (o blastOptions) plan(now time.Time) (loadgen.Plan, map[loadgen.Target]loadgen.ItemLimit, error) {
	prof := o.prof
	if prof == nil {
		prof = profile.Default()
	}
	p := loadgen.Plan{BaseURL: strings.TrimRight(o.target, "/"), Buyers: o.buyers, UserPrefix: o.prefix, Profile: prof,
		Clicks: o.clicks, Retries: o.retries, Replays: o.replays, Conns: o.conns, Timeout: o.timeout,
		Engine: o.engine, HTTP: o.http}
	var err error
	if p.TLS, err = o.tls.Config(); err != nil {
		return p, nil, err
	}
	p.Secret = []byte(o.secret.forProfile(prof))
	if !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
		return p, nil, fmt.Errorf("--target %q: want an http:// or https:// URL", o.target)
	}
	for _, it := range o.items {
		saleID, itemID, ok := strings.Cut(it, ":")
		if !ok {
			saleID, itemID = o.sale, it
		}
		if saleID == "" || itemID == "" {
			return p, nil, fmt.Errorf("--item %q: give --sale, or the item as SALE:ITEM", it)
		}
		p.Targets = append(p.Targets, loadgen.Target{SaleID: saleID, ItemID: itemID})
	}
	if p.Shard, err = loadgen.ParseShard(o.shard); err != nil {
		return p, nil, fmt.Errorf("--shard: %w", err)
	}
	p.At = now.Add(o.in)
	if o.at != "" {
		if p.At, err = time.Parse(time.RFC3339Nano, o.at); err != nil {
			return p, nil, fmt.Errorf("--at %q: want RFC 3339, e.g. 2026-11-27T09:00:00Z", o.at)
		}
		if !p.At.After(now) {
			return p, nil, fmt.Errorf("--at %s is not in the future (now %s)", o.at, now.UTC().Format(time.RFC3339))
		}
	} else if o.in < 0 {
		return p, nil, fmt.Errorf("--in %s: cannot release in the past", o.in)
	} else if p.Shard.Count > 1 {
		return p, nil, errors.New("--shard splits one burst over processes: give them all the same --at")
	}
	if err := o.openModel(&p); err != nil {
		return p, nil, err
	}
	if err := o.reads.apply(&p, o.at, now, o.seed); err != nil {
		return p, nil, err
	}
	if o.pay != 0 || o.cancel != 0 {
		p.After = &loadgen.AfterPurchase{Pay: o.pay, Cancel: o.cancel, Seed: o.seed}
	}
	if o.room {
		p.Journey = &loadgen.Room{MaxPoll: o.maxPoll, Wait: o.roomWait}
	}
	reveal, err := blast.ParseReveal(o.reveal)
	if err != nil {
		return p, nil, err
	}
	if reveal == blast.RevealOn {
		p = blast.WithReveal(p)
	}
	if o.maxPoll <= 0 || o.roomWait <= 0 || o.maxSkew < 0 {
		return p, nil, errors.New("--max-poll and --room-wait must be positive, --max-skew not negative")
	}
	if (o.stock >= 0) != (o.limit >= 0) {
		return p, nil, errors.New("--stock and --limit go together")
	}
	if err := p.Validate(); err != nil {
		return p, nil, err
	}
	if o.stock < 0 {
		return p, nil, nil
	}
	limits := map[loadgen.Target]loadgen.ItemLimit{}
	for _, t := range p.Targets {
		limits[t] = loadgen.ItemLimit{Stock: o.stock, PerUser: o.limit}
	}
	return p, limits, nil
}

func runBlast(ctx context.Context, out, progress io.Writer, o blastOptions) error {
	prof, err := o.profile.load()
	if err != nil {
		return err
	}
	if o.tokens != "" {
		withFile := *prof
		withFile.Token = profile.Token{Type: profile.TokenFile, File: o.tokens}
		prof = &withFile
	}
	o.prof = prof
	// The classification is read before anything else is prepared: a file that is missing or
	// wrong ends the burst before it starts, with the status exitCode gives it.
	var classifier *loadgen.Classifier
	if o.classify != "" {
		classifier, err = loadgen.LoadClassifier(o.classify)
	} else {
		classifier, err = loadgen.ClassifierFor(prof)
	}
	if err != nil {
		return err
	}
	p, limits, err := o.plan(time.Now())
	if err != nil {
		return usageError(err)
	}
	metrics, err := o.metrics.remoteWrite()
	if err != nil {
		return usageError(err)
	}
	if o.tls.Insecure {
		fmt.Fprintln(progress, "warning: --insecure: the target's certificate is not verified; anyone on the path can read and change the traffic")
	}
	// The tokens are made once, here, so a missing key or secret is a usage error before any probe.
	if p.Minter, err = prof.Minter(string(p.Secret)); err != nil {
		return usageError(err)
	}
	if err := p.Validate(); err != nil {
		return usageError(err)
	}
	p.Classifier = classifier
	rep, err := blast.Fire(ctx, blast.Burst{Plan: p, Limits: limits, RedisURL: o.endpoints.redisURL, PostgresURL: o.endpoints.postgresURL,
		CheckState: o.checkState, Settle: o.settle, MaxSkew: o.maxSkew, Reveal: o.reveal,
		Thresholds: blast.Thresholds{MaxP99: o.maxP99, MinThroughput: o.minThroughput, ExpectSold: o.expectSold},
		Results:    o.results, Records: o.records, HTML: o.html, Metrics: metrics}, progress)
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
