package articleshop

import (
	"context"
	"crypto/rsa"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

// Default topic and consumer group, the names the article uses.
const (
	DefaultTopic = "flash-sale-orders"
	DefaultGroup = "flash-sale-order-consumer"
)

//go:embed schema.sql
var schemaSQL string

//go:embed reserve.lua
var reserveLua string

//go:embed release.lua
var releaseLua string

// Scripts are package-level so every Shop shares the SHA; go-redis runs them with EVALSHA and
// falls back to EVAL only when the server has not seen the script yet.
var (
	reserveScript = redis.NewScript(reserveLua)
	releaseScript = redis.NewScript(releaseLua)
)

// ErrItemNotFound is returned when an item id is not in flash_sale_item.
var ErrItemNotFound = errors.New("articleshop: item not found")

// Config is everything Open needs to reach the three services and verify buyers.
type Config struct {
	Addr        string         // listen address; used by the binary only, kept here for one config shape
	RedisURL    string         // redis://host:port/db
	PostgresURL string         // postgres://user@host:port/db
	Brokers     []string       // Kafka bootstrap brokers
	Topic       string         // order topic; DefaultTopic when empty
	Group       string         // consumer group; DefaultGroup when empty
	PublicKey   *rsa.PublicKey // verifies the buyers' RS256 tokens
	Logger      *slog.Logger   // slog.Default() when nil
	// PublishVia, when set, is a TCP proxy (host:port) in front of a single broker that the order
	// writer dials instead of any broker's address (a Toxiproxy proxy in a fault drill); the
	// consumer reaches the brokers directly.
	PublishVia string
	// PublishTimeout bounds the publish of one order (3s when zero): past it the reservation is
	// released and the buyer is told 503.
	PublishTimeout time.Duration
	// LoseOrders is a planted lie, for fsctl's own tests only: when the publish fails the buyer
	// is still told 202 and the order is lost (the writer does not try a batch twice). fsctl
	// gameday drill must catch it.
	LoseOrders bool
}

// Shop is one running checkout service: its connections, the order writer and the order reader.
type Shop struct {
	cfg    Config
	log    *slog.Logger
	rdb    *redis.Client
	pool   *pgxpool.Pool
	writer *kafka.Writer
	reader *kafka.Reader
}

// Open connects to Redis and PostgreSQL, applies the schema, creates the order topic if missing
// and creates the Kafka writer and reader. It does not serve HTTP nor consume yet: that is Handler's and Run's job.
func Open(ctx context.Context, cfg Config) (*Shop, error) {
	if cfg.PublicKey == nil {
		return nil, errors.New("articleshop: Config.PublicKey is required")
	}
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("articleshop: Config.Brokers is required")
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PublishTimeout <= 0 {
		cfg.PublishTimeout = 3 * time.Second
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("articleshop: redis url: %w", err)
	}
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("articleshop: redis: %w", err)
	}
	pool, err := pgxpool.New(ctx, cfg.PostgresURL)
	if err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("articleshop: postgres: %w", err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		_ = rdb.Close()
		return nil, err
	}
	if err := ensureTopic(ctx, cfg.Brokers, cfg.Topic); err != nil {
		pool.Close()
		_ = rdb.Close()
		return nil, err
	}
	s := &Shop{cfg: cfg, log: cfg.Logger, rdb: rdb, pool: pool}
	s.writer = &kafka.Writer{
		Addr:  kafka.TCP(cfg.Brokers...),
		Topic: cfg.Topic,
		// An own Transport, not the process-wide default: the default caches topic metadata for
		// every writer in the process, so a topic created after that cache was filled reads as
		// "Unknown Topic Or Partition" until it expires.
		Transport: writerTransport(cfg.PublishVia),
		Balancer:  &kafka.Hash{}, // key = item id, so one item's orders stay in order on one partition
		// RequireAll: a 202 must mean the order survives a broker loss.
		RequiredAcks: kafka.RequireAll,
		// The default 1 s batch timeout would hold every synchronous request for a second.
		BatchTimeout:           2 * time.Millisecond,
		WriteTimeout:           5 * time.Second,
		MaxAttempts:            3,
		AllowAutoTopicCreation: false,
	}
	if cfg.LoseOrders {
		// The lie is whole: a batch whose one attempt failed is dropped, not sent again once the
		// broker can be reached (the writer's own retries would deliver the order after all).
		s.writer.MaxAttempts = 1
	}
	s.reader = kafka.NewReader(kafka.ReaderConfig{
		Brokers:     cfg.Brokers,
		GroupID:     cfg.Group,
		Topic:       cfg.Topic,
		MinBytes:    1,
		MaxBytes:    10 << 20,
		MaxWait:     250 * time.Millisecond,
		StartOffset: kafka.FirstOffset, // a new group must not skip orders published before it joined
	})
	return s, nil
}

// writerTransport is the order writer's own transport; through via, when set, whatever broker
// address the metadata names.
func writerTransport(via string) *kafka.Transport {
	t := &kafka.Transport{MetadataTTL: 5 * time.Second}
	if via != "" {
		d := &net.Dialer{Timeout: 5 * time.Second}
		t.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, via)
		}
	}
	return t
}

// Migrate applies schema.sql; every statement is IF NOT EXISTS so it is safe at every start.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, schemaSQL); err != nil {
		return fmt.Errorf("articleshop: migrate: %w", err)
	}
	return nil
}

// Close stops the Kafka writer and reader and closes the Redis and PostgreSQL connections.
func (s *Shop) Close() error {
	errW := s.writer.Close()
	if t, ok := s.writer.Transport.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
	errR := s.reader.Close()
	errRedis := s.rdb.Close()
	s.pool.Close()
	return errors.Join(errW, errR, errRedis)
}

// CreateItem inserts an item with its quantity; an existing item is left untouched so restarts
// with the same --item flags never reset a sale in progress.
func (s *Shop) CreateItem(ctx context.Context, id int64, name string, quantity int) error {
	_, err := s.pool.Exec(ctx,
		`INSERT INTO flash_sale_item (id, name, quantity) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
		id, name, quantity)
	if err != nil {
		return fmt.Errorf("articleshop: create item %d: %w", id, err)
	}
	return nil
}

// Preheat is the article's "stock pre-heat service": it copies quantity − sold from PostgreSQL
// into the Redis stock and rebuilds the buyers set from the live orders. Like the article, it
// trusts PostgreSQL as it is now, so reservations still in flight in Kafka are not counted.
func (s *Shop) Preheat(ctx context.Context, itemID int64) error {
	var quantity, sold int64
	err := s.pool.QueryRow(ctx, `SELECT quantity, sold FROM flash_sale_item WHERE id = $1`, itemID).
		Scan(&quantity, &sold)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrItemNotFound
	}
	if err != nil {
		return fmt.Errorf("articleshop: preheat %d: %w", itemID, err)
	}
	rows, err := s.pool.Query(ctx,
		`SELECT user_id FROM flash_sale_order WHERE item_id = $1 AND status IN ('PENDING', 'PAID')`, itemID)
	if err != nil {
		return fmt.Errorf("articleshop: preheat %d: %w", itemID, err)
	}
	users, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("articleshop: preheat %d: %w", itemID, err)
	}
	stockKey, buyersKey := itemKeys(itemID)
	// One MULTI so no purchase sees the new stock with the old buyers set, or the reverse.
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, buyersKey)
		if len(users) > 0 {
			members := make([]any, len(users))
			for i, u := range users {
				members[i] = u
			}
			p.SAdd(ctx, buyersKey, members...)
		}
		p.Set(ctx, stockKey, quantity-sold, 0)
		return nil
	})
	if err != nil {
		return fmt.Errorf("articleshop: preheat %d: %w", itemID, err)
	}
	return nil
}

// itemKeys returns the item's stock and buyers keys; the shared {item:<id>} hash tag keeps both in
// one cluster slot, which a multi-key Lua script requires.
func itemKeys(itemID int64) (stock, buyers string) {
	tag := "{item:" + strconv.FormatInt(itemID, 10) + "}"
	return tag + ":stock", tag + ":buyers"
}

// LoadPublicKey reads a PEM-encoded RSA public key (PKIX "PUBLIC KEY" or PKCS#1 "RSA PUBLIC KEY").
func LoadPublicKey(path string) (*rsa.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("articleshop: public key: %w", err)
	}
	key, err := jwt.ParseRSAPublicKeyFromPEM(data)
	if err != nil {
		return nil, fmt.Errorf("articleshop: public key %s: %w", path, err)
	}
	return key, nil
}
