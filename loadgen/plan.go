// Package loadgen is fsctl's load generator: every virtual buyer is prepared before the start
// (token, idempotency key, request), parked on a barrier and released at one wall-clock instant
// (or on an open-model schedule), sent by the raw or the net/http engine through a journey
// (purchase, waiting room, pay or cancel after), and every request is recorded and classified by
// the target profile's rules. fsctl blast, the demo, the drill, the game day and the tests drive
// it; judging what the buyers were told is package blast's.
package loadgen

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// Target is one item buyers are spread over.
type Target struct {
	SaleID, ItemID string
}

// String is the target as the --item flag spells it, SALE:ITEM.
func (t Target) String() string { return t.SaleID + ":" + t.ItemID }

// Shard selects this process's part of the buyers: buyer k belongs to shard k mod Count, so n
// processes given the same plan and shards 0..n-1 cover every buyer exactly once.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want i/n, e.g. 0/4", s)
	}
	idx, err1 := strconv.Atoi(i)
	cnt, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || cnt < 1 || idx < 0 || idx >= cnt {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 0 <= i < n, e.g. 0/4", s)
	}
	return Shard{Index: idx, Count: cnt}, nil
}

// Owns reports whether buyer k belongs to this shard; the zero Shard owns everyone.
func (s Shard) Owns(k int) bool { return s.Count <= 1 || k%s.Count == s.Index }

// Plan describes one burst.
type Plan struct {
	// BaseURL of the checkout, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Targets are the items buyers go for: buyer k buys Targets[k mod len(Targets)].
	Targets []Target
	// Buyers is the size of the whole burst over all shards.
	Buyers int
	// UserPrefix names buyer k "<prefix><k>".
	UserPrefix string
	// Profile says how to buy from the target: the purchase request, the token and the
	// classification; nil means profile.Default(), the bundled server.
	Profile *profile.Profile
	// Minter makes each buyer's token; nil means the Profile's, with Secret as its HS256 secret.
	Minter *profile.Minter
	// Secret, when set, replaces an HS256 profile's secret (the --jwt-secret flag).
	Secret []byte
	// Clicks per buyer, released together; every click carries a new Idempotency-Key.
	Clicks int
	// Retries resend a click with the SAME key after a timeout, transport error or 5xx.
	Retries int
	// RetryAfter, when set, makes a buyer do what the answer's Retry-After header asks, as an
	// app would: a retry waits the time it names (at most RetryAfter), and an answer that carries
	// one (429 and 503: PAUSED, RATE_LIMITED, OVERLOADED ...) is retried too, within Retries.
	// Zero retries at once, and only what Retryable names.
	RetryAfter time.Duration
	// Replays resend a click with the same key after an answer (a resubmitted form), so the
	// same-key-same-answer invariant is checked even when nothing fails.
	Replays int
	// At is the release instant every buyer's latency is measured from.
	At time.Time
	// Conns is the pool of pre-dialled connections the buyers share.
	Conns int
	// Timeout bounds one request; 0 means AutoTimeout, sized to the burst.
	Timeout time.Duration
	// Shard picks this process's buyers.
	Shard Shard
	// Classifier maps answers to outcomes; nil means the Profile's rules (its classify section).
	Classifier *Classifier
	// Journey is what one click does; nil means Purchase (the direct buy).
	Journey Journey
	// Schedule, when set, is the open model: buyer k is released at At plus Schedule.Offset(k)
	// instead of everyone at At.
	Schedule *Schedule
	// After, when set, is what buyers do with a reservation: pay, cancel or abandon it.
	After *AfterPurchase
	// Refresh, when set, is the buyers' page traffic around the release; Poll, when set, makes
	// every reserved buyer poll its order until it is persisted. Both go over a pool of their own,
	// ReadConns connections (0 means DefaultReadConns), apart from the purchases'.
	Refresh   *Refresh
	Poll      *OrderPoll
	ReadConns int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Progress, when set, is told how many buyers are prepared, about every 10%.
	Progress func(done, total int)
	// Answered, when set, goes up by one as each click's answer is settled (answered, failed or
	// timed out, retries included), so a caller can show progress during the burst.
	Answered *atomic.Int64
	// Settled, when set, is called with each record the raw engine settles (answered, failed or
	// timed out), from the engine's goroutines, so a caller can count answers during the burst; the
	// http engine's attempts run the Journey, which a caller wraps for the same purpose.
	Settled func(*Record)
	// Engine sends the requests: EngineAuto (the default, "" too), EngineHTTP or EngineRaw.
	// Resolve says which one auto picks.
	Engine string
	// HTTP is the HTTP version the http engine speaks: HTTPAuto (the default, "" too), HTTP1 or
	// HTTP2; the raw engine speaks HTTP/1.1 only.
	HTTP string
	// TLS, when set, is how an https:// target is reached (TLSFiles.Config); nil is the system's
	// roots and the URL's host.
	TLS *tls.Config
}

// settled counts n settled clicks for the caller's progress display.
func (p *Plan) settled(n int) {
	if p.Answered != nil {
		p.Answered.Add(int64(n))
	}
}

// Validate reports the first setting that cannot work.
func (p Plan) Validate() error {
	switch {
	case p.BaseURL == "":
		return errors.New("no target URL")
	case len(p.Targets) == 0:
		return errors.New("no item to buy: give --sale and --item (or --item sale:item)")
	case p.Buyers < 1:
		return fmt.Errorf("buyers %d: need at least one", p.Buyers)
	case p.Clicks < 1:
		return fmt.Errorf("clicks %d: need at least one", p.Clicks)
	case p.Retries < 0 || p.Replays < 0:
		return errors.New("retries and replays cannot be negative")
	case p.RetryAfter < 0:
		return fmt.Errorf("retry-after %s: must be positive (or 0 to retry at once)", p.RetryAfter)
	case p.Conns < 1:
		return fmt.Errorf("conns %d: need at least one connection", p.Conns)
	case p.Timeout < 0:
		return fmt.Errorf("timeout %s: must be positive (or 0 for auto)", p.Timeout)
	case p.At.IsZero():
		return errors.New("no release time")
	case p.Shard.Count > 0 && (p.Shard.Index < 0 || p.Shard.Index >= p.Shard.Count):
		return fmt.Errorf("shard %d/%d out of range", p.Shard.Index, p.Shard.Count)
	case p.Engine != "" && p.Engine != EngineAuto && p.Engine != EngineHTTP && p.Engine != EngineRaw:
		return fmt.Errorf("engine %q: want %s, %s or %s", p.Engine, EngineAuto, EngineHTTP, EngineRaw)
	}
	if err := validHTTP(p.HTTP); err != nil {
		return err
	}
	if err := p.enoughUsers(); err != nil {
		return err
	}
	if err := p.validateReads(); err != nil {
		return err
	}
	if err := p.validateJourneys(); err != nil {
		return err
	}
	if p.Engine == EngineRaw {
		if err := p.rawSupported(); err != nil {
			return err
		}
	}
	if p.Schedule != nil {
		if err := p.Schedule.Validate(); err != nil {
			return err
		}
	}
	if p.After != nil {
		if err := p.After.Validate(); err != nil {
			return err
		}
	}
	for _, t := range p.Targets {
		if t.SaleID == "" || t.ItemID == "" {
			return fmt.Errorf("target %q: need both a sale and an item", t)
		}
	}
	return nil
}

// Buyer is one prepared virtual buyer.
type Buyer struct {
	Index  int
	User   string
	Target Target
}

// Roster returns this shard's buyers, in index order. Buyer k is "<prefix><k>", or the token
// file's k-th user when the tokens come from a file (Validate makes sure there are enough).
func (p Plan) Roster() []Buyer {
	var users []string
	if p.Minter != nil {
		users = p.Minter.Users()
	}
	var out []Buyer
	for k := 0; k < p.Buyers; k++ {
		if p.Shard.Owns(k) {
			user := p.UserPrefix + strconv.Itoa(k)
			if users != nil {
				user = users[k]
			}
			out = append(out, Buyer{Index: k, User: user, Target: p.Targets[k%len(p.Targets)]})
		}
	}
	return out
}

// target is the plan's profile: the bundled server's when none is given.
func (p Plan) target() *profile.Profile { return profile.OrBundled(p.Profile) }

// validateJourneys refuses a journey whose endpoint the target's profile does not declare: the
// waiting room (http.room), the pay and cancel follow-ups (http.pay, http.order), a revealed
// purchase path (http.purchasePath). What kind of server the target is does not matter.
func (p Plan) validateJourneys() error {
	prof := p.target()
	_, room := p.Journey.(*Room)
	switch {
	case room && prof.HTTP.Room == "":
		return missingEndpoint(prof, "the waiting room", "room", func(h profile.HTTP) string { return h.Room })
	case p.After != nil && p.After.Pay > 0 && prof.HTTP.Pay == "":
		return missingEndpoint(prof, "the pay follow-up", "pay", func(h profile.HTTP) string { return h.Pay })
	case p.After != nil && p.After.Cancel > 0 && prof.HTTP.Order == "":
		return missingEndpoint(prof, "the cancel follow-up", "order", func(h profile.HTTP) string { return h.Order })
	case p.Reveals() && prof.HTTP.PurchasePath == "":
		err := missingEndpoint(prof, "following a revealed purchase path", "purchasePath", func(h profile.HTTP) string { return h.PurchasePath })
		return fmt.Errorf("%w; drop --reveal on", err)
	}
	return nil
}

// missingEndpoint says that what needs the endpoint http.field, which prof does not declare, and
// what the bundled server's is.
func missingEndpoint(prof *profile.Profile, what, field string, path func(profile.HTTP) string) error {
	return fmt.Errorf("%s needs the profile's http.%s (fsctl serve's is %s): profile %s declares none",
		what, field, path(profile.Default().HTTP), prof.Name)
}

// classifier is the plan's Classifier, else the one its profile's classify section compiles to:
// the target's rules are written once, in its profile.
func (p Plan) classifier() (*Classifier, error) {
	if p.Classifier != nil {
		return p.Classifier, nil
	}
	return ClassifierFor(p.target())
}

// enoughUsers refuses more buyers than a token file has users; it can tell only once the
// Minter is known (Run makes it).
func (p Plan) enoughUsers() error {
	if p.Minter == nil {
		return nil
	}
	if users := p.Minter.Users(); users != nil && p.Buyers > len(users) {
		return fmt.Errorf("%d buyers but the token file has tokens for %d users: lower --buyers or add tokens", p.Buyers, len(users))
	}
	return nil
}

// minter is the plan's token maker: Minter, or the profile's with Secret as its HS256 secret.
func (p Plan) minter() (*profile.Minter, error) {
	if p.Minter != nil {
		return p.Minter, nil
	}
	m, err := p.target().Minter(string(p.Secret))
	if err != nil {
		return nil, fmt.Errorf("buyers' tokens: %w", err)
	}
	return m, nil
}

// Key is the Idempotency-Key of a buyer's click. It carries the release instant so a rerun with
// the same prefix never replays an earlier run's answers, and it is the same in every shard.
func (p Plan) Key(b Buyer, click int) string { return clickKey(b.User, p.At.UnixNano(), click) }

// clickKey is Key's text, USER-AT-cCLICK, put together without fmt: preparing a burst makes one a
// click.
func clickKey(user string, at int64, click int) string {
	var buf [64]byte
	b := append(append(buf[:0], user...), '-')
	b = append(strconv.AppendInt(b, at, 10), "-c"...)
	return string(strconv.AppendInt(b, int64(click), 10))
}

// Intended is when buyer b is meant to go: At for a burst, its place on the schedule otherwise.
// Latency counts from it even when the buyer goes late.
func (p Plan) Intended(b Buyer) time.Time {
	if p.Schedule == nil {
		return p.At
	}
	return p.At.Add(p.Schedule.Offset(b.Index))
}

func (p Plan) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// ReleaseLead is how far ahead of now a release is set: time to prepare every buyer before it.
// An RS256 signature costs about a millisecond on one core (BenchmarkProfilePrepare), so a
// profile that signs so gets a millisecond a buyer on top of the two seconds every release gets;
// prof nil is the bundled server's HS256.
func ReleaseLead(prof *profile.Profile, buyers int) time.Duration {
	lead := 2 * time.Second
	if prof != nil && prof.Token.Type == profile.TokenRS256 {
		lead += time.Duration(buyers) * time.Millisecond
	}
	return lead
}

// HealthPath is what the probe and the warm-up GET: the profile's health path, else "/". Any
// status will do: only the connection matters.
func HealthPath(prof *profile.Profile, sale string) string {
	if prof.HTTP.Health != "" {
		return profile.Render(prof.HTTP.Health, profile.Vars{"sale": sale})
	}
	return "/"
}

// healthPath is HealthPath of the plan's profile and first sale.
func (p Plan) healthPath() string {
	var sale string
	if len(p.Targets) > 0 {
		sale = p.Targets[0].SaleID
	}
	return HealthPath(p.target(), sale)
}
