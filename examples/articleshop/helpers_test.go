package articleshop

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// env is one shop under test with its HTTP server and a Redis client for assertions.
type env struct {
	shop *Shop
	srv  *httptest.Server
	rdb  *redis.Client
}

var (
	keyOnce    sync.Once
	privateKey *rsa.PrivateKey
	keyErr     error
)

func signingKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	keyOnce.Do(func() {
		var data []byte
		if data, keyErr = os.ReadFile("keys/buyer-signing.pem"); keyErr == nil {
			privateKey, keyErr = jwt.ParseRSAPrivateKeyFromPEM(data)
		}
	})
	if keyErr != nil {
		t.Fatalf("private key: %v", keyErr)
	}
	return privateKey
}

// token mints an RS256 buyer token the way fsctl will: claim userId plus exp.
func token(t *testing.T, user string) string {
	t.Helper()
	claims := jwt.MapClaims{"userId": user, "exp": time.Now().Add(time.Hour).Unix()}
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(signingKey(t))
	if err != nil {
		t.Fatalf("sign token: %v", err)
	}
	return s
}

// randomItemID keeps parallel tests apart on the shared Redis.
func randomItemID(t *testing.T) int64 {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1e9))
	if err != nil {
		t.Fatal(err)
	}
	return 1e9 + n.Int64()
}

// newEnv opens a shop on a fresh database and topic, serves it and runs its consumer until the
// test ends.
func newEnv(t *testing.T) *env {
	t.Helper()
	pgURL := testenv.Postgres(t)
	rdb := testenv.Redis(t)
	topic := testenv.KafkaTopic(t, 1)
	pub, err := LoadPublicKey("keys/buyer-signing.pub.pem")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shop, err := Open(ctx, Config{
		RedisURL:    "redis://" + rdb.Options().Addr + "/" + strconv.Itoa(rdb.Options().DB),
		PostgresURL: pgURL,
		Brokers:     testenv.KafkaBrokers(t),
		Topic:       topic,
		Group:       testenv.ID(t, "articleshop"),
		PublicKey:   pub,
		Logger:      slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	srv := httptest.NewServer(shop.Handler())
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- shop.Run(runCtx) }()
	t.Cleanup(func() {
		srv.Close()
		stop()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		_ = shop.Close()
	})
	return &env{shop: shop, srv: srv, rdb: rdb}
}

// item creates and preheats an item with a random id.
func (e *env) item(t *testing.T, quantity int) int64 {
	t.Helper()
	id := randomItemID(t)
	stockKey, buyersKey := itemKeys(id)
	t.Cleanup(func() { e.rdb.Del(context.Background(), stockKey, buyersKey) })
	ctx := context.Background()
	if err := e.shop.CreateItem(ctx, id, "test item", quantity); err != nil {
		t.Fatal(err)
	}
	if err := e.shop.Preheat(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// answer is a decoded HTTP response.
type answer struct {
	status int
	body   map[string]any
}

// do sends a request with an optional bearer token and JSON body and decodes the answer.
func (e *env) do(t *testing.T, method, path, bearer, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return answer{}
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&a.body); err != nil {
		t.Errorf("%s %s: decode: %v", method, path, err)
	}
	return a
}

func (e *env) purchase(t *testing.T, item int64, user string) answer {
	t.Helper()
	return e.do(t, "POST", "/api/flash-sales/items/"+strconv.FormatInt(item, 10)+"/purchase", token(t, user), "")
}

// waitOrders polls PostgreSQL until the item has want orders, failing after a minute.
func (e *env) waitOrders(t *testing.T, item int64, want int) {
	t.Helper()
	eventually.OK(t, 60*time.Second, func() error {
		var n int
		err := e.shop.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM flash_sale_order WHERE item_id = $1`, item).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			return fmt.Errorf("item %d: %d orders in PostgreSQL, want %d", item, n, want)
		}
		return nil
	})
}
