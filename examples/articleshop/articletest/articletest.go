// Package articletest runs the Spring-article-style shop (examples/articleshop) in-process on the
// real services for fsctl's tests, with the shipped profile profiles/spring-article.yaml pointed
// at it: the second, foreign target every operator command is tested against.
package articletest

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/examples/articleshop"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// Sale is the sale id fsctl is given for the shop: the article has no sale table, so it is only
// a label its profile's queries ignore.
const Sale = "article"

// Shop is one running article shop and how fsctl reaches it.
type Shop struct {
	// Base is the shop's URL.
	Base                  string
	RedisURL, PostgresURL string
	Brokers               []string
	Topic, Group          string
	// Items are the shop's item ids, as fsctl names them.
	Items []string
	// Sale is the label fsctl passes as --sale.
	Sale string
	// Profile is profiles/spring-article.yaml with this shop's topic and group.
	Profile *profile.Profile
	// ProfilePath is the shipped profile's file.
	ProfilePath string

	shop   *articleshop.Shop
	minter *profile.Minter
	t      testing.TB
}

// Root is the repository's folder.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Start runs a shop on a fresh database and its own topic and group, with one item per entry of
// quantities (created and preheated, each with a random id so parallel tests do not share keys);
// everything is stopped and the items' keys removed when the test ends.
func Start(t testing.TB, quantities ...int) *Shop {
	t.Helper()
	rdb := testenv.Redis(t)
	root := Root()
	s := &Shop{
		RedisURL: stack.EndpointsFromEnv().RedisURL, PostgresURL: testenv.Postgres(t), Brokers: testenv.KafkaBrokers(t),
		Topic: testenv.KafkaTopic(t, 3), Group: testenv.ID(t, "article"), Sale: Sale, t: t,
		ProfilePath: filepath.Join(root, "profiles", "spring-article.yaml"),
	}
	p, err := profile.Load(s.ProfilePath)
	if err != nil {
		t.Fatal(err)
	}
	p.Kafka.Topic, p.Kafka.Group = s.Topic, s.Group
	s.Profile = p
	if s.minter, err = p.Minter(""); err != nil {
		t.Fatal(err)
	}
	pub, err := articleshop.LoadPublicKey(filepath.Join(root, "examples", "articleshop", "keys", "buyer-signing.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.shop, err = articleshop.Open(ctx, articleshop.Config{
		RedisURL: s.RedisURL, PostgresURL: s.PostgresURL, Brokers: s.Brokers, Topic: s.Topic, Group: s.Group,
		PublicKey: pub, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("open the article shop: %v", err)
	}
	srv := httptest.NewServer(s.shop.Handler())
	s.Base = srv.URL
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.shop.Run(runCtx) }()
	t.Cleanup(func() {
		srv.Close()
		stop()
		if err := <-done; err != nil {
			t.Errorf("article shop consumer: %v", err)
		}
		_ = s.shop.Close()
	})
	for _, q := range quantities {
		id := itemID(t)
		item := strconv.FormatInt(id, 10)
		keys := p.Keys(s.Sale, item, 1)[0]
		t.Cleanup(func() { rdb.Del(context.Background(), keys.Stock, keys.Buyers) })
		if err := s.shop.CreateItem(ctx, id, "item "+item, q); err != nil {
			t.Fatal(err)
		}
		if err := s.shop.Preheat(ctx, id); err != nil {
			t.Fatal(err)
		}
		s.Items = append(s.Items, item)
	}
	return s
}

func itemID(t testing.TB) int64 {
	n, err := rand.Int(rand.Reader, big.NewInt(1e9))
	if err != nil {
		t.Fatal(err)
	}
	return 1e9 + n.Int64()
}

// Token mints a buyer's token with the profile's key and claims.
func (s *Shop) Token(user string) string {
	s.t.Helper()
	tok, err := s.minter.Mint(user, s.Sale, time.Now(), time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// Buy sends one purchase through the profile's request template and returns the status and body.
func (s *Shop) Buy(user, item string) (int, string) {
	s.t.Helper()
	req, err := s.Profile.PurchaseRequest(s.Base, profile.Buy{Sale: s.Sale, Item: item, User: user, Token: s.Token(user)})
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		s.t.Fatalf("purchase: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// WaitOrders waits until the item has n live orders in PostgreSQL (the consumer is asynchronous).
func (s *Shop) WaitOrders(item string, n int64) {
	s.t.Helper()
	t, err := profile.Connect(context.Background(), s.Profile, s.RedisURL, s.PostgresURL)
	if err != nil {
		s.t.Fatal(err)
	}
	defer t.Close()
	eventually.OK(s.t, 30*time.Second, func() error {
		live, err := t.DB.Live(context.Background(), s.Sale, item)
		if err != nil || live != n {
			return fmt.Errorf("item %s: %d live orders (err %v), want %d", item, live, err, n)
		}
		return nil
	})
}
