package blast_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// generic is the bundled server's profile without deep: fsctl serve read only through what the
// profile declares, as any foreign checkout is.
func generic() *profile.Profile {
	p := *profile.Default()
	p.Deep, p.Name = "", "fsctl-generic"
	return &p
}

// TestCheckStateOnTheBundledCheckout fires 200 buyers at 50 units of the bundled checkout
// through the generic profile and checks it through its SQL and keys; then planted drift (one
// unit more in Redis, then one order row gone) fails the check, naming the item.
func TestCheckStateOnTheBundledCheckout(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 50, Limit: 1})
	prof := generic()
	ctx := context.Background()
	tg, err := profile.Connect(ctx, prof, stack.EndpointsFromEnv().RedisURL, c.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	target := loadgen.Target{SaleID: c.Sale.ID, ItemID: "hot"}
	limits, err := blast.LimitsFromDB(ctx, tg.DB, []loadgen.Target{target})
	if err != nil || limits[target] != (loadgen.ItemLimit{Stock: 50, PerUser: 1}) {
		t.Fatalf("limits from the profile's SQL: %+v, %v", limits, err)
	}
	p := plan(c.Base, []loadgen.Target{target}, 200)
	p.Profile = prof
	res, err := loadgen.Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(res.Records, outcome.Reserved); n != 50 {
		t.Fatalf("%d RESERVED, want 50", n)
	}
	for _, v := range blast.CheckResponses(res.Records, limits) {
		if !v.Passed() {
			t.Errorf("%s: %v", v.Check, v.Problems)
		}
	}
	vs, err := blast.CheckState(ctx, tg, c.Sale.ID, res.Records, limits, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || !finding.OK(vs, false) {
		t.Fatalf("verdicts on a clean burst: %+v", vs)
	}

	stockKey := prof.Keys(c.Sale.ID, "hot", 1)[0].Stock
	if err := tg.Redis().Incr(ctx, stockKey).Err(); err != nil {
		t.Fatal(err)
	}
	vs, err = blast.CheckState(ctx, tg, c.Sale.ID, res.Records, limits, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if v := find(t, vs, "Redis agrees with PostgreSQL"); v.Passed() || !strings.Contains(strings.Join(v.Problems, "\n"), "hot: units lost or doubled: redis stock 1 + holds 50 + paid 0 = 51, quantity 50") {
		t.Errorf("planted drift: %+v", v)
	}
	if err := tg.Redis().Decr(ctx, stockKey).Err(); err != nil {
		t.Fatal(err)
	}
	// An order that ended since (cancelled here) still reached PostgreSQL: only its hold, still
	// in Redis, disagrees.
	var ended string
	if err := tg.Pool().QueryRow(ctx, `UPDATE orders SET status = 'CANCELLED' WHERE id = (SELECT id FROM orders WHERE sale_id = $1 LIMIT 1) RETURNING id::text`,
		c.Sale.ID).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if vs, err = blast.CheckState(ctx, tg, c.Sale.ID, res.Records, limits, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := find(t, vs, "every RESERVED order reached PostgreSQL"); !v.Passed() {
		t.Errorf("a cancelled order counted as lost: %+v", v)
	}
	if v := find(t, vs, "Redis agrees with PostgreSQL"); v.Passed() {
		t.Errorf("a hold of a cancelled order went unnoticed: %+v", v)
	}
	if _, err := tg.Pool().Exec(ctx, `UPDATE orders SET status = 'PENDING' WHERE id = $1`, ended); err != nil {
		t.Fatal(err)
	}
	var lostUser string
	if err := tg.Pool().QueryRow(ctx, `DELETE FROM orders WHERE id = (SELECT id FROM orders WHERE sale_id = $1 LIMIT 1) RETURNING user_id`,
		c.Sale.ID).Scan(&lostUser); err != nil {
		t.Fatal(err)
	}
	vs, err = blast.CheckState(ctx, tg, c.Sale.ID, res.Records, limits, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if v := find(t, vs, "every RESERVED order reached PostgreSQL"); v.Passed() || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "hot: "+lostUser) {
		t.Errorf("a lost order of %s: %+v", lostUser, v)
	}
	if v := find(t, vs, "Redis agrees with PostgreSQL"); v.Passed() {
		t.Errorf("a lost order leaves Redis one unit short, yet %+v", v)
	}

	// With sql.itemOrders the item's orders are read in one query, not buyer by buyer: a broken
	// sql.userOrders is never asked, and the same loss is found.
	byItem := *tg.P
	byItem.SQL.UserOrders = "SELECT id, status FROM no_such_table WHERE user_id = @user"
	items := &profile.Target{P: &byItem, DB: profile.NewDB(&byItem, tg.Pool()), Stocks: profile.NewStocks(&byItem, tg.Redis())}
	vs, err = blast.CheckState(ctx, items, c.Sale.ID, res.Records, limits, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if v := find(t, vs, "every RESERVED order reached PostgreSQL"); v.Passed() || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "hot: "+lostUser) {
		t.Errorf("a lost order of %s, read item by item: %+v", lostUser, v)
	}

	// Without sql.liveBuyers each buyer's orders are read one by one: the same loss is found.
	perBuyer := *tg.P
	perBuyer.SQL.LiveBuyers, perBuyer.SQL.ItemOrders = "", ""
	one := &profile.Target{P: &perBuyer, DB: profile.NewDB(&perBuyer, tg.Pool()), Stocks: profile.NewStocks(&perBuyer, tg.Redis())}
	vs, err = blast.CheckState(ctx, one, c.Sale.ID, res.Records, limits, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if v := find(t, vs, "every RESERVED order reached PostgreSQL"); v.Passed() || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "hot: "+lostUser) {
		t.Errorf("a lost order of %s, read buyer by buyer: %+v", lostUser, v)
	}
}

func count(recs []loadgen.Record, c outcome.Code) int {
	n := 0
	for _, r := range recs {
		if r.Outcome == c {
			n++
		}
	}
	return n
}

func find(t *testing.T, vs []finding.Finding, name string) finding.Finding {
	t.Helper()
	for _, v := range vs {
		if v.Check == name {
			return v
		}
	}
	t.Fatalf("no verdict %q in %+v", name, vs)
	return finding.Finding{}
}

// seen is one purchase request as the recording shop got it.
type seen struct {
	Method, URL, Auth, User, Key, Type, Body string
}

// recorder is a shop that records every purchase request (anything but GET) and answers the
// first try of each key with a 503, then 202 with an order id.
type recorder struct {
	mu    sync.Mutex
	reqs  []seen
	tries map[string]int
	fail  bool
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		return
	}
	body, _ := io.ReadAll(r.Body)
	s := seen{Method: r.Method, URL: r.URL.RequestURI(), Auth: r.Header.Get("Authorization"), User: r.Header.Get("X-User"),
		Key: r.Header.Get("X-Key"), Type: r.Header.Get("Content-Type"), Body: string(body)}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, s)
	rc.tries[s.Key]++
	first := rc.tries[s.Key] == 1
	rc.mu.Unlock()
	if rc.fail && first {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, `{"orderId":"o-%s"}`, s.Key)
}

// jsonShop is a profile whose purchase is a PUT with a JSON body, extra headers and no token.
func jsonShop() *profile.Profile {
	p := generic()
	p.Name = "json-shop"
	p.HTTP = profile.HTTP{Health: "/up"}
	p.Purchase = profile.Purchase{Method: http.MethodPut, URL: "/shop/${sale}/${item}/buy?n=${buyer}",
		Headers: map[string]string{"X-User": "${user}", "X-Key": "${key}", "Content-Type": "application/json"},
		Body:    `{"user":"${user}","item":"${item}","key":"${key}"}`}
	p.Token = profile.Token{Type: profile.TokenNone}
	return p
}

// TestProfilePurchaseTemplate: both engines send the rendered method, URL, headers and body, and
// a retry of a key resends the same body.
func TestProfilePurchaseTemplate(t *testing.T) {
	for _, engine := range []string{loadgen.EngineHTTP, loadgen.EngineRaw} {
		t.Run(engine, func(t *testing.T) {
			rc := &recorder{tries: map[string]int{}, fail: engine == loadgen.EngineHTTP}
			hs := httptest.NewServer(rc)
			defer hs.Close()
			p := plan(hs.URL, []loadgen.Target{{SaleID: "s1", ItemID: "i1"}}, 4)
			p.Profile, p.Secret, p.Engine, p.Conns = jsonShop(), nil, engine, 2
			if engine == loadgen.EngineHTTP {
				p.Retries = 1
			}
			res, err := loadgen.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if n := count(res.Records, outcome.Reserved); n != 4 {
				t.Fatalf("%d RESERVED, want 4: %+v", n, res.Records)
			}
			want := 4
			if engine == loadgen.EngineHTTP {
				want = 8 // the 503 and its retry
			}
			if len(rc.reqs) != want {
				t.Fatalf("%d requests, want %d", len(rc.reqs), want)
			}
			for _, s := range rc.reqs {
				var n int
				if _, err := fmt.Sscanf(s.User, "buyer-%d", &n); err != nil {
					t.Fatalf("X-User %q", s.User)
				}
				w := seen{Method: http.MethodPut, URL: fmt.Sprintf("/shop/s1/i1/buy?n=%d", n), User: s.User, Key: s.Key,
					Type: "application/json", Body: fmt.Sprintf(`{"user":"%s","item":"i1","key":"%s"}`, s.User, s.Key)}
				if s != w || !strings.HasPrefix(s.Key, s.User+"-") {
					t.Errorf("request %+v\nwant      %+v", s, w)
				}
			}
		})
	}
}

// TestProfileTokenFile: a token file's users are the buyers, each sending its own token.
func TestProfileTokenFile(t *testing.T) {
	rc := &recorder{tries: map[string]int{}}
	hs := httptest.NewServer(rc)
	defer hs.Close()
	file := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(file, []byte("# user token\nalice tok-a\nbob tok-b\n\ncarol tok-c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prof := jsonShop()
	prof.Token = profile.Token{Type: profile.TokenFile, File: file}
	prof.Purchase.Headers["Authorization"] = "Bearer ${token}"
	p := plan(hs.URL, []loadgen.Target{{SaleID: "s1", ItemID: "i1"}}, 3)
	p.Profile, p.Secret = prof, nil
	if _, err := loadgen.Run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range rc.reqs {
		got[s.User] = s.Auth
	}
	want := map[string]string{"alice": "Bearer tok-a", "bob": "Bearer tok-b", "carol": "Bearer tok-c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("buyers and their tokens %v, want %v", got, want)
	}
}

// TestProfileRS256: an rs256 profile's tokens verify with the public key and carry the
// templated claims.
func TestProfileRS256(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "buyer.pem")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	rc := &recorder{tries: map[string]int{}}
	hs := httptest.NewServer(rc)
	defer hs.Close()
	prof := jsonShop()
	prof.Token = profile.Token{Type: profile.TokenRS256, KeyFile: keyFile, Claims: map[string]any{"userId": "${user}", "aud": "shop-${sale}"}}
	prof.Purchase.Headers["Authorization"] = "Bearer ${token}"
	p := plan(hs.URL, []loadgen.Target{{SaleID: "s1", ItemID: "i1"}}, 2)
	p.Profile, p.Secret = prof, nil
	if _, err := loadgen.Run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(rc.reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(rc.reqs))
	}
	for _, s := range rc.reqs {
		claims := jwt.MapClaims{}
		_, err := jwt.ParseWithClaims(strings.TrimPrefix(s.Auth, "Bearer "), claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience("shop-s1"), jwt.WithExpirationRequired())
		if err != nil || claims["userId"] != s.User {
			t.Errorf("token of %s: claims %v, %v", s.User, claims, err)
		}
	}
}

// TestBlastTheArticleShop fires 300 buyers over two items of 50 of the Spring-article shop
// through its shipped profile: exactly 100 reserved, everyone else sold out, and the profile's
// checks of its PostgreSQL and Redis hold.
func TestBlastTheArticleShop(t *testing.T) {
	s := articletest.Start(t, 50, 50)
	ctx := context.Background()
	targets := []loadgen.Target{{SaleID: s.Sale, ItemID: s.Items[0]}, {SaleID: s.Sale, ItemID: s.Items[1]}}
	p := plan(s.Base, targets, 300)
	p.Profile, p.Secret = s.Profile, nil
	res, err := loadgen.Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if r, so := count(res.Records, outcome.Reserved), count(res.Records, outcome.SoldOut); r != 100 || so != 200 {
		t.Fatalf("%d RESERVED, %d SOLD_OUT; want 100 and 200", r, so)
	}
	tg, err := profile.Connect(ctx, s.Profile, s.RedisURL, s.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	limits, err := blast.LimitsFromDB(ctx, tg.DB, targets)
	if err != nil || limits[targets[1]] != (loadgen.ItemLimit{Stock: 50, PerUser: 1}) {
		t.Fatalf("limits %+v, %v", limits, err)
	}
	vs, err := blast.CheckState(ctx, tg, s.Sale, res.Records, limits, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	vs = append(vs, blast.CheckResponses(res.Records, limits)...)
	if len(vs) != 6 || !finding.OK(vs, false) {
		t.Errorf("verdicts %+v", vs)
	}
}
