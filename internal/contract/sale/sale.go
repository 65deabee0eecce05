// Package sale holds the definition of a flash sale (its items, opening time, per-user limit and hold
// TTL), how it is read from YAML, and the identifier rules every layer validates against.
package sale

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fsctl/fsctl/internal/platform/yamlfield"
)

// Defaults applied by Normalize where a sale file leaves a field out.
const (
	DefaultPerUserLimit = 1
	DefaultHoldTTL      = 10 * time.Minute
	// MaxPerUserLimit bounds the per-user limit: the Redis buyer record is a bitmask of slots.
	MaxPerUserLimit = 16
	// MinHoldTTL keeps tests able to expire holds quickly without allowing a zero TTL.
	MinHoldTTL = time.Second
	// MaxShards bounds how many stock shards one item may be split into.
	MaxShards = 64
	// MaxWaitReplicas bounds the replica acknowledgements a reserve may wait for.
	MaxWaitReplicas = 16
	// DefaultWaitTimeout is how long a reserve waits for replicas when the sale asks for them.
	DefaultWaitTimeout = 50 * time.Millisecond
	// MaxPerSaleLimit bounds the per-sale limit: a buyer's sale claims are slots 0..15, as
	// PostgreSQL's orders.sale_slot records them.
	MaxPerSaleLimit = 16
	// DefaultRevealTTL is how long a purchase path handed out at the opening stays valid.
	DefaultRevealTTL = time.Minute
	// MaxRevealTTL bounds it: a path is meant for the buyer's next click, not the whole sale.
	MaxRevealTTL = time.Hour
)

// Sale is one flash sale: a set of items that open for purchase at one instant.
type Sale struct {
	ID           string    `yaml:"id" json:"id"`
	Name         string    `yaml:"name" json:"name"`
	OpensAt      time.Time `yaml:"opensAt" json:"opensAt"`
	PerUserLimit int       `yaml:"perUserLimit" json:"perUserLimit"`
	// PerSaleLimit, when above zero, caps the units one buyer may hold across all the sale's items
	// together ("one per user per sale" is 1); perUserLimit still caps each item. Zero: no cap
	// across items.
	PerSaleLimit int           `yaml:"perSaleLimit,omitempty" json:"perSaleLimit,omitempty"`
	HoldTTL      time.Duration `yaml:"holdTTL" json:"holdTTL"`
	Paused       bool          `yaml:"paused" json:"paused"`
	// ClosesAt ends the sale; the zero time means it stays open until sold out.
	ClosesAt time.Time `yaml:"closesAt,omitempty" json:"closesAt,omitzero"`
	// WaitReplicas, when above zero, makes every reserve wait (Redis WAIT) until that many replicas
	// acknowledged it, or WaitTimeout passed, so a failover loses fewer reservations.
	WaitReplicas int           `yaml:"waitReplicas,omitempty" json:"waitReplicas,omitempty"`
	WaitTimeout  time.Duration `yaml:"waitTimeout,omitempty" json:"waitTimeout,omitempty"`
	// WaitPolicy is what a reserve does when fewer than WaitReplicas replicas acknowledged it in
	// time: WaitPolicyCount (the default) or WaitPolicyRelease. Only with WaitReplicas.
	WaitPolicy string `yaml:"waitPolicy,omitempty" json:"waitPolicy,omitempty"`
	// Room is the waiting room in front of the purchase path; off unless Room.Enabled.
	Room Room `yaml:"room,omitempty" json:"room,omitzero"`
	// Reveal hides the purchase endpoint until the opening; off unless Reveal.Enabled.
	Reveal Reveal `yaml:"reveal,omitempty" json:"reveal,omitzero"`
	// RateLimits cap requests per buyer and per client address on the queue and purchase endpoints.
	RateLimits RateLimits `yaml:"rateLimits,omitempty" json:"rateLimits,omitzero"`
	Items      []Item     `yaml:"items" json:"items"`
	// Revision is the stored sale's last change (microseconds, strictly increasing per sale), set
	// by the order store and never part of a definition: the waiting room's live settings keep the
	// revision they were written at and refuse older ones, so an instance that read the sale a
	// moment before an operator's change cannot write it back. Zero: unknown (not checked).
	Revision int64 `yaml:"-" json:"-"`
}

// Policies of a reserve that fewer replicas acknowledged than the sale's waitReplicas asked for.
const (
	// WaitPolicyCount answers RESERVED anyway and counts the short WAIT: the order's durability
	// comes from Kafka, and a failover that loses the hold in Redis leaves it to reconcile.
	WaitPolicyCount = "count"
	// WaitPolicyRelease releases the reservation at once, before anything reaches Kafka, and tells
	// the buyer to retry: no buyer hears RESERVED for a hold only the master has.
	WaitPolicyRelease = "release"
)

// Fair-start orders of the buyers who join the waiting room before the sale opens.
const (
	// FairStartRandom gives every early joiner a random place at the opening instant, so arriving
	// early (by script) buys nothing; after the opening it is first come, first served.
	FairStartRandom = "random"
	// FairStartFIFO keeps joining order from the first joiner on.
	FairStartFIFO = "fifo"
)

// Modes of a sale whose waiting room cannot be reached.
const (
	// FailClosed admits nobody while the room is down: the purchase path answers NOT_ADMITTED.
	FailClosed = "closed"
	// FailOpen lets buyers straight to the (still rate-limited) purchase path.
	FailOpen = "open"
)

// Waiting-room defaults applied by Normalize.
const (
	DefaultWaiterTTL = 30 * time.Second
	DefaultActiveTTL = 2 * time.Minute
	MaxPowDifficulty = 24
)

// Room configures the waiting room of a sale.
type Room struct {
	Enabled bool `yaml:"enabled" json:"enabled"`
	// AdmissionRate is how many buyers per second leave the queue for the checkout; a file may
	// write it 50, 50/s or 3000/m.
	AdmissionRate float64 `yaml:"admissionRate" json:"admissionRate" yamlfield:"rate"`
	// MaxActive caps the admitted buyers still active (polling, not yet done); 0 = no cap.
	MaxActive int `yaml:"maxActive,omitempty" json:"maxActive,omitempty"`
	// FairStart orders the early joiners: random (default) or fifo.
	FairStart string `yaml:"fairStart,omitempty" json:"fairStart,omitempty"`
	// WaiterTTL: a waiter who stops polling this long loses the place.
	WaiterTTL time.Duration `yaml:"waiterTTL,omitempty" json:"waiterTTL,omitempty"`
	// ActiveTTL: an admitted buyer who stops polling this long loses the slot; also the lifetime of
	// an admission token.
	ActiveTTL time.Duration `yaml:"activeTTL,omitempty" json:"activeTTL,omitempty"`
	// PowDifficulty is the proof of work asked at queue entry, in leading zero bits (0 = none).
	PowDifficulty int `yaml:"powDifficulty,omitempty" json:"powDifficulty,omitempty"`
	// FailMode is what the sale does when the room's state is unreachable: closed (default) or open.
	FailMode string `yaml:"failMode,omitempty" json:"failMode,omitempty"`
	// Paused stops admissions (the queue keeps its order).
	Paused bool `yaml:"paused,omitempty" json:"paused,omitempty"`
}

// Reveal configures a sale whose purchase endpoint is revealed at the opening: before it nobody
// can learn where to buy, so a script cannot fire purchases ahead of the sale.
type Reveal struct {
	Enabled bool `yaml:"enabled" json:"enabled"`
	// TTL is how long a purchase path handed out stays valid (default DefaultRevealTTL).
	TTL time.Duration `yaml:"ttl,omitempty" json:"ttl,omitempty"`
}

// RateLimits are per-second request limits of a sale's queue and purchase endpoints; zero means
// no limit. Each endpoint counts separately.
type RateLimits struct {
	PerUser      int `yaml:"perUser,omitempty" json:"perUser,omitempty"`
	PerUserBurst int `yaml:"perUserBurst,omitempty" json:"perUserBurst,omitempty"`
	PerAddress   int `yaml:"perAddress,omitempty" json:"perAddress,omitempty"`
	// PerAddressBurst defaults to PerAddress, PerUserBurst to PerUser.
	PerAddressBurst int `yaml:"perAddressBurst,omitempty" json:"perAddressBurst,omitempty"`
}

// Item is one product of a sale with a fixed quantity of units.
type Item struct {
	ID         string `yaml:"id" json:"id"`
	Name       string `yaml:"name" json:"name"`
	Quantity   int64  `yaml:"quantity" json:"quantity"`
	PriceCents int64  `yaml:"priceCents" json:"priceCents"`
	// Shards splits a hot item's stock over this many Redis counters on different hash tags
	// (default 1); buyers borrow from other shards when their home shard is empty.
	Shards int `yaml:"shards,omitempty" json:"shards,omitempty"`
	// Epoch is the generation of the item's Redis state, PostgreSQL's sale_items.epoch: a rebuild
	// of Redis bumps it, and a reservation made on an older one is stale. It is read from
	// PostgreSQL, never part of a sale definition.
	Epoch int64 `yaml:"-" json:"-"`
}

// ShardCount is the number of stock shards of the item; zero (not set) means one.
func (it Item) ShardCount() int { return max(it.Shards, 1) }

// ValidSlug reports whether s is a valid sale or item id: [A-Za-z0-9_-]{1,64}. Every purchase
// checks two, so it is a loop rather than a regular expression.
func ValidSlug(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidUserID reports whether s can be a user id (a JWT sub): 1–128 bytes of printable,
// non-space characters, so ids can be numbers, UUIDs or e-mail addresses.
func ValidUserID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// Normalize fills defaults for the fields a sale file may leave out.
func (s *Sale) Normalize() {
	if s.PerUserLimit == 0 {
		s.PerUserLimit = DefaultPerUserLimit
	}
	if s.HoldTTL == 0 {
		s.HoldTTL = DefaultHoldTTL
	}
	if s.Name == "" {
		s.Name = s.ID
	}
	if s.WaitReplicas > 0 && s.WaitTimeout == 0 {
		s.WaitTimeout = DefaultWaitTimeout
	}
	if s.WaitReplicas > 0 && s.WaitPolicy == "" {
		s.WaitPolicy = WaitPolicyCount
	}
	s.Room.normalize()
	if s.Reveal.Enabled && s.Reveal.TTL == 0 {
		s.Reveal.TTL = DefaultRevealTTL
	}
	if s.RateLimits.PerUserBurst == 0 {
		s.RateLimits.PerUserBurst = s.RateLimits.PerUser
	}
	if s.RateLimits.PerAddressBurst == 0 {
		s.RateLimits.PerAddressBurst = s.RateLimits.PerAddress
	}
	for i := range s.Items {
		if s.Items[i].Name == "" {
			s.Items[i].Name = s.Items[i].ID
		}
		if s.Items[i].Shards == 0 {
			s.Items[i].Shards = 1
		}
	}
}

// Validate reports the first thing wrong with the sale, phrased so an operator knows what to fix.
// The error is a *FieldError naming the field's path in a sale file.
func (s Sale) Validate() error {
	if !ValidSlug(s.ID) {
		return invalid("id", "sale id %q: must match [A-Za-z0-9_-]{1,64}", s.ID)
	}
	if s.PerUserLimit < 1 || s.PerUserLimit > MaxPerUserLimit {
		return invalid("perUserLimit", "sale %s: perUserLimit %d: must be between 1 and %d", s.ID, s.PerUserLimit, MaxPerUserLimit)
	}
	if s.PerSaleLimit < 0 || s.PerSaleLimit > MaxPerSaleLimit {
		return invalid("perSaleLimit", "sale %s: perSaleLimit %d: must be between 1 and %d (0 or left out: no limit across items)", s.ID, s.PerSaleLimit, MaxPerSaleLimit)
	}
	if s.HoldTTL < MinHoldTTL {
		return invalid("holdTTL", "sale %s: holdTTL %s: must be at least %s", s.ID, s.HoldTTL, MinHoldTTL)
	}
	if s.OpensAt.IsZero() {
		return invalid("opensAt", "sale %s: opensAt is required (RFC 3339, e.g. 2026-12-01T12:00:00Z)", s.ID)
	}
	if !s.ClosesAt.IsZero() && !s.ClosesAt.After(s.OpensAt) {
		return invalid("closesAt", "sale %s: closesAt %s must be after opensAt %s", s.ID, s.ClosesAt.Format(time.RFC3339), s.OpensAt.Format(time.RFC3339))
	}
	if s.WaitReplicas < 0 || s.WaitReplicas > MaxWaitReplicas {
		return invalid("waitReplicas", "sale %s: waitReplicas %d: must be between 0 and %d", s.ID, s.WaitReplicas, MaxWaitReplicas)
	}
	if s.WaitTimeout < 0 || s.WaitTimeout > 5*time.Second {
		return invalid("waitTimeout", "sale %s: waitTimeout %s: must be between 0 and 5s", s.ID, s.WaitTimeout)
	}
	switch {
	case s.WaitPolicy == "":
	case s.WaitPolicy != WaitPolicyCount && s.WaitPolicy != WaitPolicyRelease:
		return invalid("waitPolicy", "sale %s: waitPolicy %q: must be %s or %s", s.ID, s.WaitPolicy, WaitPolicyCount, WaitPolicyRelease)
	case s.WaitReplicas == 0:
		return invalid("waitPolicy", "sale %s: waitPolicy %s needs waitReplicas (1 or more): without a replica wait there is no short acknowledgement to act on", s.ID, s.WaitPolicy)
	}
	if err := s.Room.validate(); err != nil {
		return invalid("room."+err.Field, "sale %s: room: %v", s.ID, err.Err)
	}
	if s.Reveal.Enabled && (s.Reveal.TTL < time.Second || s.Reveal.TTL > MaxRevealTTL) {
		return invalid("reveal.ttl", "sale %s: reveal: ttl %s: must be between 1s and %s", s.ID, s.Reveal.TTL, MaxRevealTTL)
	}
	if r := s.RateLimits; r.PerUser < 0 || r.PerAddress < 0 || r.PerUserBurst < 0 || r.PerAddressBurst < 0 {
		return invalid("rateLimits", "sale %s: rateLimits must not be negative", s.ID)
	}
	if len(s.Items) == 0 {
		return invalid("items", "sale %s: needs at least one item", s.ID)
	}
	seen := make(map[string]bool, len(s.Items))
	for i, it := range s.Items {
		field := func(name string) string { return fmt.Sprintf("items[%d].%s", i, name) }
		if !ValidSlug(it.ID) {
			return invalid(field("id"), "sale %s: item id %q: must match [A-Za-z0-9_-]{1,64}", s.ID, it.ID)
		}
		if seen[it.ID] {
			return invalid(field("id"), "sale %s: item %s appears twice", s.ID, it.ID)
		}
		seen[it.ID] = true
		if it.Quantity < 0 {
			return invalid(field("quantity"), "sale %s: item %s: quantity %d must not be negative", s.ID, it.ID, it.Quantity)
		}
		if it.PriceCents < 0 {
			return invalid(field("priceCents"), "sale %s: item %s: priceCents %d must not be negative", s.ID, it.ID, it.PriceCents)
		}
		if it.Shards < 0 || it.Shards > MaxShards {
			return invalid(field("shards"), "sale %s: item %s: shards %d: must be between 1 and %d", s.ID, it.ID, it.Shards, MaxShards)
		}
	}
	return nil
}

// ItemIDs returns the ids of the sale's items, in definition order.
func (s Sale) ItemIDs() []string {
	ids := make([]string, len(s.Items))
	for i, it := range s.Items {
		ids[i] = it.ID
	}
	return ids
}

// OpenAt reports whether the sale takes purchases at t by its schedule (pausing aside): at or after
// OpensAt and, when it has an end, before ClosesAt.
func (s Sale) OpenAt(t time.Time) bool {
	return !t.Before(s.OpensAt) && (s.ClosesAt.IsZero() || t.Before(s.ClosesAt))
}

// ReleasesShortWaits reports whether a reserve that fewer replicas acknowledged than WaitReplicas
// is released and answered with a retry rather than RESERVED.
func (s Sale) ReleasesShortWaits() bool {
	return s.WaitReplicas > 0 && s.WaitPolicy == WaitPolicyRelease
}

// Ended reports whether the sale has closed by t.
func (s Sale) Ended(t time.Time) bool { return !s.ClosesAt.IsZero() && !t.Before(s.ClosesAt) }

// Item returns the item with the given id.
func (s Sale) Item(id string) (Item, bool) {
	for _, it := range s.Items {
		if it.ID == id {
			return it, true
		}
	}
	return Item{}, false
}

// Parse reads a sale from YAML (JSON is valid YAML too), rejects unknown fields, fills defaults and
// validates it. Every mistake is a *FieldError naming its line and field: a syntax error, an
// unknown key (with the known ones), a value of the wrong kind, a value that does not validate.
func Parse(r io.Reader) (Sale, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return Sale{}, fmt.Errorf("read sale: %w", err)
	}
	return parse(b)
}

func parse(b []byte) (Sale, error) {
	var s Sale
	doc, err := yamlfield.Decode(b, &s)
	if err != nil {
		return Sale{}, err
	}
	if yamlfield.Empty(doc) {
		return Sale{}, invalid("", "the file is empty: a sale needs at least id, opensAt and items")
	}
	s.Normalize()
	if err := s.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Line = yamlfield.Line(doc, fe.Field)
		}
		return Sale{}, err
	}
	return s, nil
}

// LoadFile reads and validates a sale file. A file that cannot be read is os.ReadFile's error;
// one that is read but wrong is a *FieldError naming the file, the line and the field.
func LoadFile(path string) (Sale, error) {
	return yamlfield.Load(path, parse)
}

func (r *Room) normalize() {
	if r.FairStart == "" {
		r.FairStart = FairStartRandom
	}
	if r.FailMode == "" {
		r.FailMode = FailClosed
	}
	if r.WaiterTTL == 0 {
		r.WaiterTTL = DefaultWaiterTTL
	}
	if r.ActiveTTL == 0 {
		r.ActiveTTL = DefaultActiveTTL
	}
}

func (r Room) validate() *FieldError {
	if !r.Enabled {
		return nil
	}
	switch {
	case r.AdmissionRate <= 0:
		return invalid("admissionRate", "admissionRate %g: must be above 0 buyers per second", r.AdmissionRate)
	case r.MaxActive < 0:
		return invalid("maxActive", "maxActive %d must not be negative", r.MaxActive)
	case r.FairStart != FairStartRandom && r.FairStart != FairStartFIFO:
		return invalid("fairStart", "fairStart %q: must be random or fifo", r.FairStart)
	case r.FailMode != FailClosed && r.FailMode != FailOpen:
		return invalid("failMode", "failMode %q: must be closed or open", r.FailMode)
	case r.WaiterTTL < time.Second:
		return invalid("waiterTTL", "waiterTTL %s must be at least 1s", r.WaiterTTL)
	case r.ActiveTTL < time.Second:
		return invalid("activeTTL", "activeTTL %s must be at least 1s", r.ActiveTTL)
	case r.PowDifficulty < 0 || r.PowDifficulty > MaxPowDifficulty:
		return invalid("powDifficulty", "powDifficulty %d: must be between 0 and %d leading zero bits", r.PowDifficulty, MaxPowDifficulty)
	}
	return nil
}
