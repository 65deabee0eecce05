// Package profile describes a checkout fsctl is pointed at: how to buy from it (the purchase
// request, the buyer's token, how its answers map to outcomes) and how to read it (its Redis keys
// and the SQL that returns each item's quantity, sold counter and orders). Every operator command
// reads the target through one; the bundled server's is the default.
package profile

import (
	"os"
	"path/filepath"
	"time"
)

// Deep is the value of the deep field that says the target is fsctl serve itself.
const Deep = "fsctl"

// Profile is one target profile, as a file spells it.
type Profile struct {
	// Name labels the target in reports.
	Name string `yaml:"name"`
	// Description is one line for humans.
	Description string `yaml:"description"`
	// Deep is "fsctl" when the target is the bundled server, whose internals reconcile reads
	// order by order beyond what this file declares.
	Deep string `yaml:"deep"`
	// Purchase is the request a buyer sends.
	Purchase Purchase `yaml:"purchase"`
	// Token is how each buyer's credential is made.
	Token Token `yaml:"token"`
	// Classify maps the target's answers to outcomes (blast's classification rules).
	Classify Classify `yaml:"classify"`
	// HTTP names the target's other endpoints; each one left out is a panel or check that is not
	// available, not an error.
	HTTP HTTP `yaml:"http"`
	// Redis holds the key templates of an item's stock.
	Redis Redis `yaml:"redis"`
	// SQL holds the queries that read the source of truth.
	SQL SQL `yaml:"sql"`
	// Limits holds what the target enforces that no query returns.
	Limits Limits `yaml:"limits"`
	// Kafka names the order log, when the target has one.
	Kafka Kafka `yaml:"kafka"`
	// Fix declares what reconcile --fix may change and how.
	Fix Fix `yaml:"fix"`

	// dir is the folder of the profile's file: relative file names in it start there.
	dir string
	// source is where the profile came from, for messages.
	source string
}

// Purchase is the purchase request template.
type Purchase struct {
	// Method is the HTTP method; POST when left out.
	Method string `yaml:"method"`
	// URL is a path under the target's base URL (/api/...) or a whole URL.
	URL string `yaml:"url"`
	// Headers are sent with every purchase.
	Headers map[string]string `yaml:"headers"`
	// Body is the request body; none when empty.
	Body string `yaml:"body"`
}

// Token types.
const (
	TokenHS256 = "hs256"
	TokenRS256 = "rs256"
	TokenFile  = "file"
	TokenNone  = "none"
)

// Token says how a buyer's credential is made.
type Token struct {
	// Type is hs256, rs256, file or none.
	Type string `yaml:"type"`
	// Secret is the HS256 secret itself (prefer SecretEnv).
	Secret string `yaml:"secret"`
	// SecretEnv names the environment variable holding the HS256 secret.
	SecretEnv string `yaml:"secretEnv"`
	// KeyFile is the RS256 private key (PEM, PKCS#1 or PKCS#8).
	KeyFile string `yaml:"keyFile"`
	// KeyEnv names a variable that, when set, holds the file of a private key that signs the
	// tokens instead, as an identity provider does: ES256, RS256 or EdDSA by the key, its RFC 7638
	// thumbprint as kid (auth.SigningKey). A secret given on the command line still wins.
	KeyEnv string `yaml:"keyEnv"`
	// IssuerEnv and AudienceEnv name the variables of the iss and aud claims of KeyEnv's tokens.
	IssuerEnv   string `yaml:"issuerEnv"`
	AudienceEnv string `yaml:"audienceEnv"`
	// File lists ready-made tokens, one "user token" pair per line.
	File string `yaml:"file"`
	// Claims are the token's claims; string values are templates (${user}, ${sale}).
	Claims map[string]any `yaml:"claims"`
	// TTL is how long a minted token is valid after the last buyer's release; 1h when left out.
	TTL time.Duration `yaml:"ttl"`
}

// HTTP names the target's endpoints besides the purchase.
type HTTP struct {
	// Health answers 2xx when the target is up; blast warms its connections on it, so it should
	// be cheap.
	Health string `yaml:"health"`
	// Metrics is fsctl serve's Prometheus endpoint (its metric names).
	Metrics string `yaml:"metrics"`
	// Admin is fsctl serve's operator API.
	Admin string `yaml:"admin"`
	// SalePage is fsctl serve's sale page (stock, limit, server time).
	SalePage string `yaml:"salePage"`

	// The buyer journeys beyond the purchase: each one a profile leaves out is a journey blast
	// refuses for the target, naming the field.

	// Room is the waiting room's queue (${sale}): a buyer GETs its challenge at Room/challenge,
	// POSTs the solved challenge to Room to join, and polls its ticket at Room/{ticket} (the
	// protocol roomwire describes).
	Room string `yaml:"room"`
	// Order is one order (${order}, and ${sale}, ${item}): GET answers its status (the order
	// polls), DELETE cancels it (the cancel follow-up).
	Order string `yaml:"order"`
	// Pay pays one order (${order}, and ${sale}, ${item}): a POST of {"paymentToken": ...}.
	Pay string `yaml:"pay"`
	// PurchasePath answers a buyer's revealed purchase path (${sale}, ${item}): a GET whose
	// answer's purchasePath is where the buyer then buys.
	PurchasePath string `yaml:"purchasePath"`
}

// Redis holds the key templates of one shard of one item.
type Redis struct {
	// Tag is the hash tag of an unsharded item, or of a sharded item's shard 0.
	Tag string `yaml:"tag"`
	// ShardTag is the hash tag of shard k >= 1; without it items are not sharded.
	ShardTag string `yaml:"shardTag"`
	// Spread salts each rendered tag of a sharded item as fsctl serve does (redisconn.SpreadTag),
	// so shard k of n hashes into the k-th n-th of the cluster's slots.
	Spread bool `yaml:"spread"`
	// Stock is the counter of units left (a string integer).
	Stock string `yaml:"stock"`
	// Buyers records who bought: a set of users, or a hash of user to units.
	Buyers string `yaml:"buyers"`
	// Holds are the reservations awaiting payment (a sorted set or hash), when the target keeps any.
	Holds string `yaml:"holds"`
}

// SQL holds the queries, with named parameters @sale, @item and @user.
type SQL struct {
	// Items returns the sale's item ids (one column).
	Items string `yaml:"items"`
	// Item returns one row with the columns quantity and sold.
	Item string `yaml:"item"`
	// Shards returns the item's number of stock shards (needs redis.shardTag).
	Shards string `yaml:"shards"`
	// PerUserLimit returns the sale's per-user limit (else limits.perUser).
	PerUserLimit string `yaml:"perUserLimit"`
	// Live returns how many live (pending or paid) orders the item has.
	Live string `yaml:"live"`
	// Paid returns how many paid orders the item has.
	Paid string `yaml:"paid"`
	// UserOrders returns a user's orders of the item: columns id and status.
	UserOrders string `yaml:"userOrders"`
	// LiveBuyers returns the users with live orders of the item (and, as a second column, how many).
	LiveBuyers string `yaml:"liveBuyers"`
	// ItemOrders returns every order of the item: columns user_id, id and status. With it, the
	// state check reads a settled sale's orders in one query an item instead of UserOrders once
	// per buyer whose reservations ended (about 100,000 queries after the 30-minute soak).
	ItemOrders string `yaml:"itemOrders"`
	// LiveStatuses are the statuses of a live order.
	LiveStatuses []string `yaml:"liveStatuses"`
}

// Limits are rules of the target that no query returns.
type Limits struct {
	// PerUser is the units one buyer may hold of an item; 1 when left out.
	PerUser int `yaml:"perUser"`
}

// Kafka names the target's order log and, optionally, how to reach its brokers.
type Kafka struct {
	// Topic carries the orders from the checkout to the database.
	Topic string `yaml:"topic"`
	// DeadLetter is where orders that could not be written go.
	DeadLetter string `yaml:"deadLetter"`
	// Group is the consumer group that writes the orders.
	Group string `yaml:"group"`

	// Brokers are the bootstrap brokers. A command uses them, with the TLS and SASL below, when
	// neither --kafka-brokers nor FSCTL_KAFKA_BROKERS names brokers of its own.
	Brokers []string `yaml:"brokers"`
	// TLS turns TLS on (CA, Cert, ServerName and InsecureSkipVerify turn it on too).
	TLS bool `yaml:"tls"`
	// CA, Cert and Key are PEM files, relative to the profile's folder.
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	// ServerName is checked against the brokers' certificates instead of their host names.
	ServerName string `yaml:"serverName"`
	// InsecureSkipVerify trusts any certificate (tests only; every command warns).
	InsecureSkipVerify bool `yaml:"insecureSkipVerify"`
	// SASL is plain, scram-sha-256 or scram-sha-512, logging in as User.
	SASL string `yaml:"sasl"`
	User string `yaml:"user"`
	// PasswordEnv names the variable holding the SASL password; PasswordFile is a file holding
	// it. One of them, never the password itself: a profile is shared and committed.
	PasswordEnv  string `yaml:"passwordEnv"`
	PasswordFile string `yaml:"passwordFile"`
}

// Recount is the fix that sets a Redis structure from the database's live orders.
const Recount = "recount"

// Fix declares what reconcile --fix may change.
type Fix struct {
	// Sold is an UPDATE that recounts the item's sold counter.
	Sold string `yaml:"sold"`
	// Stock "recount" sets an unsharded stock counter to quantity minus live orders.
	Stock string `yaml:"stock"`
	// Buyers "recount" sets the buyers set or hash to the live buyers.
	Buyers string `yaml:"buyers"`
}

// KeyFromEnv is the key file token.keyEnv names now; "" when the profile has none or the
// variable is unset.
func (p *Profile) KeyFromEnv() string {
	if p.Token.KeyEnv == "" {
		return ""
	}
	return os.Getenv(p.Token.KeyEnv)
}

// Bundled reports whether the target is fsctl serve itself (deep: fsctl): the one test of the
// target's kind. What every target offers is declared in its profile; this is the one optional
// capability beyond it (fsctl serve's own records, scripts and repairs), asked only where it is
// used.
func (p *Profile) Bundled() bool { return p.Deep == Deep }

// OrBundled is p, or the bundled server's profile when p is nil: a configuration's "no
// profile" resolved once, at its edge.
func OrBundled(p *Profile) *Profile {
	if p != nil {
		return p
	}
	return Default()
}

// Sharded reports whether items may have more than one stock shard.
func (p *Profile) Sharded() bool { return p.Redis.ShardTag != "" }

// PerUser is the per-user limit when no query returns it.
func (p *Profile) PerUser() int { return max(p.Limits.PerUser, 1) }

// Source is where the profile was read from.
func (p *Profile) Source() string { return p.source }

// Path resolves a file name of the profile against the profile's folder.
func (p *Profile) Path(name string) string {
	if name == "" || filepath.IsAbs(name) || p.dir == "" {
		return name
	}
	return filepath.Join(p.dir, name)
}

// TokenTTL is the minted tokens' lifetime after the last release.
func (p *Profile) TokenTTL() time.Duration {
	if p.Token.TTL > 0 {
		return p.Token.TTL
	}
	return time.Hour
}
