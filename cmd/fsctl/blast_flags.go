package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
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

// options are the flags as the blast package takes them, against prof (nil: the bundled server).
func (o blastOptions) options(prof *profile.Profile) blast.Options {
	return blast.Options{Profile: prof, Tokens: o.tokens, Classify: o.classify, Secret: o.secret.value, SecretGiven: o.secret.given,
		Target: o.target, Sale: o.sale, Items: o.items, Buyers: o.buyers, Conns: o.conns, Clicks: o.clicks, Retries: o.retries,
		Replays: o.replays, At: o.at, In: o.in, Timeout: o.timeout, Shard: o.shard, UserPrefix: o.prefix, Engine: o.engine,
		HTTP: o.http, TLS: o.tls, Stock: o.stock, Limit: o.limit, Room: o.room, MaxPoll: o.maxPoll, RoomWait: o.roomWait,
		Reveal: o.reveal, Pay: o.pay, Cancel: o.cancel, Seed: o.seed, Rate: o.rate, Ramp: o.ramp, Duration: o.duration,
		Reads: o.reads.reads(), RedisURL: o.endpoints.redisURL, PostgresURL: o.endpoints.postgresURL, CheckState: o.checkState,
		Settle: o.settle, MaxSkew: o.maxSkew, Thresholds: blast.Thresholds{MaxP99: o.maxP99, MinThroughput: o.minThroughput, ExpectSold: o.expectSold},
		Results: o.results, Records: o.records, HTML: o.html}
}

// plan turns the flags into a burst plan against the target the profile describes, or the
// command line's mistake.
func (o blastOptions) plan(now time.Time) (loadgen.Plan, map[loadgen.Target]loadgen.ItemLimit, error) {
	return o.options(o.prof).Plan(now)
}
