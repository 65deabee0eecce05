package blast

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// Options are a burst as `fsctl blast`'s flags describe it, before it is a plan: Prepare and Plan
// turn them into one, refusing what cannot run with a message that names the flag.
type Options struct {
	// Profile describes the target; nil is the bundled server's (profile.Default).
	Profile *profile.Profile
	// Tokens, when set, is a file of buyers' tokens minted ahead (fsctl profile tokens): it
	// replaces the profile's token section, and its users are the buyers.
	Tokens string
	// Classify is a file of classification rules replacing the profile's; "" keeps them.
	Classify string
	// Secret is --jwt-secret's value, SecretGiven whether the operator gave it
	// (profile.SecretOverride decides which secret the tokens are signed with).
	Secret      string
	SecretGiven bool

	Target     string
	Sale       string
	Items      []string // ITEM with Sale, or SALE:ITEM
	Buyers     int
	Conns      int
	Clicks     int
	Retries    int
	Replays    int
	At         string // RFC 3339; overrides In
	In         time.Duration
	Timeout    time.Duration
	Shard      string // i/n
	UserPrefix string
	Engine     string
	HTTP       string
	TLS        loadgen.TLSFiles

	// Stock and Limit (both or neither; -1: neither) are each item's units and per-user limit,
	// for a target without the bundled sale page.
	Stock int64
	Limit int

	Room              bool
	MaxPoll, RoomWait time.Duration
	Reveal            string
	Pay, Cancel       float64
	Seed              uint64
	Rate              float64
	Ramp, Duration    time.Duration
	Reads             Reads

	// What Fire does besides the burst (Burst's fields of the same names).
	RedisURL, PostgresURL  string
	CheckState             bool
	Settle                 time.Duration
	MaxSkew                time.Duration
	Thresholds             Thresholds
	Results, Records, HTML string
}

// Reads are the rest of a buyer's journey: the page refreshes around the release and the order
// polling after a 202 (--refreshes, --refreshes-after, --refresh-window, --refreshers,
// --read-conns, --poll-order, --poll-interval, --poll-wait).
type Reads struct {
	Before, After int
	Window        time.Duration
	Share         float64
	Conns         int
	Poll          bool
	PollInterval  time.Duration
	PollWait      time.Duration
	// InGiven says --in was on the command line; without it a burst with refreshes is released
	// once the whole window fits before it.
	InGiven bool
}

// FlagError is a burst the options describe that cannot run as given: the command line's
// mistake, found before anything is sent.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// Prepare is the burst the options describe, ready for its Metrics and Arm: the classification
// is read first (a file that is missing or wrong ends the burst before it starts, returned as it
// is), then the plan is made (a mistake is a *FlagError).
func Prepare(o Options, now time.Time) (Burst, error) {
	prof := o.Profile
	if prof == nil {
		prof = profile.Default()
	}
	if o.Tokens != "" {
		// A file named on the command line is where the user stands, not beside the profile.
		file, err := filepath.Abs(o.Tokens)
		if err != nil {
			return Burst{}, &FlagError{fmt.Errorf("--tokens %s: %w", o.Tokens, err)}
		}
		withFile := *prof
		withFile.Token = profile.Token{Type: profile.TokenFile, File: file}
		prof = &withFile
	}
	o.Profile = prof
	var classifier *loadgen.Classifier
	var err error
	if o.Classify != "" {
		classifier, err = loadgen.LoadClassifier(o.Classify)
	} else {
		classifier, err = loadgen.ClassifierFor(prof)
	}
	if err != nil {
		return Burst{}, err
	}
	p, limits, err := o.Plan(now)
	if err != nil {
		return Burst{}, &FlagError{Err: err}
	}
	p.Classifier = classifier
	return Burst{Plan: p, Limits: limits, RedisURL: o.RedisURL, PostgresURL: o.PostgresURL, CheckState: o.CheckState,
		Settle: o.Settle, MaxSkew: o.MaxSkew, Reveal: o.Reveal, Thresholds: o.Thresholds,
		Results: o.Results, Records: o.Records, HTML: o.HTML}, nil
}

// Arm makes the buyers' tokens, once, and checks the whole plan, so a missing key or secret is a
// *FlagError before any probe.
func (b *Burst) Arm() error {
	var err error
	if b.Plan.Minter, err = b.Plan.Profile.Minter(string(b.Plan.Secret)); err != nil {
		return &FlagError{Err: err}
	}
	if err := b.Plan.Validate(); err != nil {
		return &FlagError{Err: err}
	}
	return nil
}

// Plan turns the options into a burst plan against the target the profile describes, with each
// item's stock and limit when Stock and Limit give them; now is when the flags were read.
func (o Options) Plan(now time.Time) (loadgen.Plan, map[loadgen.Target]loadgen.ItemLimit, error) {
	prof := o.Profile
	if prof == nil {
		prof = profile.Default()
	}
	p := loadgen.Plan{BaseURL: strings.TrimRight(o.Target, "/"), Buyers: o.Buyers, UserPrefix: o.UserPrefix, Profile: prof,
		Clicks: o.Clicks, Retries: o.Retries, Replays: o.Replays, Conns: o.Conns, Timeout: o.Timeout,
		Engine: o.Engine, HTTP: o.HTTP}
	var err error
	if p.TLS, err = o.TLS.Config(); err != nil {
		return p, nil, err
	}
	p.Secret = []byte(prof.SecretOverride(o.Secret, o.SecretGiven))
	if !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
		return p, nil, fmt.Errorf("--target %q: want an http:// or https:// URL", o.Target)
	}
	for _, it := range o.Items {
		saleID, itemID, ok := strings.Cut(it, ":")
		if !ok {
			saleID, itemID = o.Sale, it
		}
		if saleID == "" || itemID == "" {
			return p, nil, fmt.Errorf("--item %q: give --sale, or the item as SALE:ITEM", it)
		}
		p.Targets = append(p.Targets, loadgen.Target{SaleID: saleID, ItemID: itemID})
	}
	if p.Shard, err = loadgen.ParseShard(o.Shard); err != nil {
		return p, nil, fmt.Errorf("--shard: %w", err)
	}
	p.At = now.Add(o.In)
	switch {
	case o.At != "":
		if p.At, err = time.Parse(time.RFC3339Nano, o.At); err != nil {
			return p, nil, fmt.Errorf("--at %q: want RFC 3339, e.g. 2026-11-27T09:00:00Z", o.At)
		}
		if !p.At.After(now) {
			return p, nil, fmt.Errorf("--at %s is not in the future (now %s)", o.At, now.UTC().Format(time.RFC3339))
		}
	case o.In < 0:
		return p, nil, fmt.Errorf("--in %s: cannot release in the past", o.In)
	case p.Shard.Count > 1:
		return p, nil, errors.New("--shard splits one burst over processes: give them all the same --at")
	}
	if err := o.openModel(&p); err != nil {
		return p, nil, err
	}
	if err := o.Reads.apply(&p, o.At, now, o.Seed); err != nil {
		return p, nil, err
	}
	if o.Pay != 0 || o.Cancel != 0 {
		p.After = &loadgen.AfterPurchase{Pay: o.Pay, Cancel: o.Cancel, Seed: o.Seed}
	}
	if o.Room {
		p.Journey = &loadgen.Room{MaxPoll: o.MaxPoll, Wait: o.RoomWait}
	}
	reveal, err := ParseReveal(o.Reveal)
	if err != nil {
		return p, nil, err
	}
	if reveal == RevealOn {
		p = WithReveal(p)
	}
	if o.MaxPoll <= 0 || o.RoomWait <= 0 || o.MaxSkew < 0 {
		return p, nil, errors.New("--max-poll and --room-wait must be positive, --max-skew not negative")
	}
	if (o.Stock >= 0) != (o.Limit >= 0) {
		return p, nil, errors.New("--stock and --limit go together")
	}
	if err := p.Validate(); err != nil {
		return p, nil, err
	}
	if o.Stock < 0 {
		return p, nil, nil
	}
	limits := map[loadgen.Target]loadgen.ItemLimit{}
	for _, t := range p.Targets {
		limits[t] = loadgen.ItemLimit{Stock: o.Stock, PerUser: o.Limit}
	}
	return p, limits, nil
}

// openModel reads --rate, --ramp and --duration into the plan's schedule.
func (o Options) openModel(p *loadgen.Plan) error {
	if o.Rate == 0 {
		if o.Ramp != 0 || o.Duration != 0 {
			return errors.New("--ramp and --duration need --rate")
		}
		return nil
	}
	if o.Ramp < 0 || o.Duration < 0 {
		return errors.New("--ramp and --duration cannot be negative")
	}
	p.Schedule = &loadgen.Schedule{Rate: o.Rate, Ramp: o.Ramp}
	if o.Duration > 0 {
		p.Buyers = p.Schedule.Count(o.Duration)
	}
	return nil
}

// apply puts the refreshes and the polling into the plan; now is when the flags were read. An
// explicit release that leaves the window no room before it is refused naming the flags.
func (r Reads) apply(p *loadgen.Plan, at string, now time.Time, seed uint64) error {
	// Negative counts and shares are refused always; a window, a pool or a poll setting only
	// when it is used (the flags' defaults are always good).
	reads := r.Before != 0 || r.After != 0 || r.Poll
	switch {
	case r.Before < 0:
		return fmt.Errorf("--refreshes %d: cannot be negative", r.Before)
	case r.After < 0:
		return fmt.Errorf("--refreshes-after %d: cannot be negative", r.After)
	case r.Share < 0 || r.Share > 1:
		return fmt.Errorf("--refreshers %v: want a share of the buyers from 0 to 1", r.Share)
	case (r.Before > 0 || r.After > 0) && r.Window <= 0:
		return fmt.Errorf("--refresh-window %s: must be positive", r.Window)
	case reads && r.Conns < 1:
		return fmt.Errorf("--read-conns %d: need at least one connection", r.Conns)
	case r.Poll && r.PollInterval <= 0:
		return fmt.Errorf("--poll-interval %s: must be positive", r.PollInterval)
	case r.Poll && r.PollWait <= 0:
		return fmt.Errorf("--poll-wait %s: must be positive", r.PollWait)
	}
	p.ReadConns = r.Conns
	if r.Poll {
		p.Poll = &loadgen.OrderPoll{Interval: r.PollInterval, Wait: r.PollWait}
	}
	if r.Before == 0 && r.After == 0 {
		return nil
	}
	p.Refresh = &loadgen.Refresh{Before: r.Before, After: r.After, Window: r.Window, Share: r.Share, Seed: seed}
	if r.Before == 0 {
		return nil
	}
	if at == "" && !r.InGiven {
		p.At = now.Add(r.Window + 2*time.Second)
		return nil
	}
	if start := p.At.Add(-r.Window); start.Before(now) {
		flag := "--in"
		if at != "" {
			flag = "--at"
		}
		return fmt.Errorf("--refresh-window %s starts %s ago: the release is only %s away; give %s at least %s or a shorter --refresh-window",
			r.Window, now.Sub(start).Round(time.Millisecond), p.At.Sub(now).Round(time.Millisecond), flag, (r.Window + 2*time.Second))
	}
	return nil
}
