package loadgen_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

func TestShardsCoverEveryBuyerOnce(t *testing.T) {
	base := loadgen.Plan{Buyers: 1001, UserPrefix: "u", Targets: []loadgen.Target{{SaleID: "s", ItemID: "a"}, {SaleID: "s", ItemID: "b"}}}
	for _, n := range []int{1, 2, 3, 7} {
		seen := map[int]int{}
		for i := range n {
			p := base
			p.Shard = loadgen.Shard{Index: i, Count: n}
			again := p.Roster()
			for j, b := range p.Roster() {
				if again[j] != b {
					t.Fatalf("shard %d/%d is not deterministic", i, n)
				}
				if b.Index%n != i || b.User != "u"+strconv.Itoa(b.Index) || b.Target != base.Targets[b.Index%2] {
					t.Fatalf("shard %d/%d has buyer %+v", i, n, b)
				}
				seen[b.Index]++
			}
		}
		if len(seen) != base.Buyers {
			t.Fatalf("%d shards cover %d of %d buyers", n, len(seen), base.Buyers)
		}
		for k, c := range seen {
			if c != 1 {
				t.Fatalf("%d shards: buyer %d appears %d times", n, k, c)
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	if s, err := loadgen.ParseShard("2/5"); err != nil || s != (loadgen.Shard{Index: 2, Count: 5}) {
		t.Errorf("2/5: %+v %v", s, err)
	}
	for _, bad := range []string{"", "1", "5/5", "-1/2", "a/b", "0/0", "1/2/3"} {
		if _, err := loadgen.ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPlanValidation(t *testing.T) {
	good := loadgen.Plan{BaseURL: "http://x", Targets: []loadgen.Target{{SaleID: "s", ItemID: "i"}}, Buyers: 1, Secret: []byte("0123456789abcdef"),
		Clicks: 1, Conns: 1, Timeout: time.Second, At: time.Unix(1, 0)}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	auto := good
	auto.Timeout, auto.Engine = 0, loadgen.EngineAuto // both mean "work it out", not "missing"
	if err := auto.Validate(); err != nil {
		t.Fatalf("auto engine and timeout refused: %v", err)
	}
	bundled := good
	bundled.Profile, bundled.Journey, bundled.After = profile.Default(), &loadgen.Room{}, &loadgen.AfterPurchase{Pay: 0.5}
	if err := bundled.Validate(); err != nil {
		t.Fatalf("fsctl serve's journeys refused: %v", err)
	}
	for name, mod := range map[string]func(*loadgen.Plan){
		"no url":          func(p *loadgen.Plan) { p.BaseURL = "" },
		"no target":       func(p *loadgen.Plan) { p.Targets = nil },
		"no item":         func(p *loadgen.Plan) { p.Targets = []loadgen.Target{{SaleID: "s"}} },
		"no buyers":       func(p *loadgen.Plan) { p.Buyers = 0 },
		"no clicks":       func(p *loadgen.Plan) { p.Clicks = 0 },
		"retries < 0":     func(p *loadgen.Plan) { p.Retries = -1 },
		"retry-after < 0": func(p *loadgen.Plan) { p.RetryAfter = -time.Second },
		"no conns":        func(p *loadgen.Plan) { p.Conns = 0 },
		"timeout < 0":     func(p *loadgen.Plan) { p.Timeout = -time.Second },
		"engine":          func(p *loadgen.Plan) { p.Engine = "turbo" },
		"no time":         func(p *loadgen.Plan) { p.At = time.Time{} },

		"bad shard":                func(p *loadgen.Plan) { p.Shard = loadgen.Shard{Index: 3, Count: 2} },
		"room of a foreign target": func(p *loadgen.Plan) { p.Profile, p.Journey = foreign(), &loadgen.Room{} },
		"pay on a foreign target":  func(p *loadgen.Plan) { p.Profile, p.After = foreign(), &loadgen.AfterPurchase{Pay: 0.5} },
	} {
		p := good
		mod(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRunRefusesBuyersWithoutTokens: a plan whose tokens cannot be made, or with more buyers
// than its token file has users, is refused before anything is sent.
func TestRunRefusesBuyersWithoutTokens(t *testing.T) {
	good := loadgen.Plan{BaseURL: "http://127.0.0.1:1", Targets: []loadgen.Target{{SaleID: "s", ItemID: "i"}}, Buyers: 3,
		Clicks: 1, Conns: 1, Timeout: time.Second, At: time.Now().Add(time.Minute)}
	unset := *profile.Default()
	unset.Token.SecretEnv = "FSCTL_TEST_NO_SUCH_SECRET"
	file := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(file, []byte("alice tok-a\nbob tok-b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := *profile.Default()
	fromFile.Token = profile.Token{Type: profile.TokenFile, File: file}
	for name, mod := range map[string]func(*loadgen.Plan){
		"no secret":          func(p *loadgen.Plan) { p.Profile = &unset },
		"short secret":       func(p *loadgen.Plan) { p.Secret = []byte("k") },
		"3 buyers, 2 tokens": func(p *loadgen.Plan) { p.Profile = &fromFile },
	} {
		p := good
		mod(&p)
		_, err := loadgen.Run(context.Background(), p)
		if err == nil || !strings.Contains(err.Error(), "token") {
			t.Errorf("%s: got %v, want a refusal about the tokens", name, err)
		}
	}
}

func TestKeysAreDistinctPerClickAndRun(t *testing.T) {
	p := loadgen.Plan{At: time.Unix(100, 0)}
	b := loadgen.Buyer{User: "u1"}
	q := p
	q.At = time.Unix(101, 0)
	if k1 := p.Key(b, 1); k1 == p.Key(b, 2) || k1 == q.Key(b, 1) || k1 != p.Key(b, 1) {
		t.Errorf("keys %s %s %s", p.Key(b, 1), p.Key(b, 2), q.Key(b, 1))
	}
}

func TestCheckFilesRefusesAPoolTooLarge(t *testing.T) {
	if err := loadgen.CheckFiles(1000, 20000); err != nil {
		t.Error(err)
	}
	err := loadgen.CheckFiles(20000, 20000)
	if err == nil || !strings.Contains(err.Error(), "--shard") {
		t.Errorf("got %v, want a refusal that points at --shard", err)
	}
}

// foreign is a profile of a checkout that is not fsctl serve: it declares none of the journeys
// beyond the purchase.
func foreign() *profile.Profile {
	p := *profile.Default()
	p.Deep, p.Name = "", "shop"
	p.HTTP.Room, p.HTTP.Order, p.HTTP.Pay, p.HTTP.PurchasePath = "", "", "", ""
	return &p
}

// TestJourneysNeedDeclaredEndpoints: a journey is refused for a profile that does not declare
// its endpoint, with a message naming the field; the kind of server does not matter, so a
// profile without deep that declares them is accepted.
func TestJourneysNeedDeclaredEndpoints(t *testing.T) {
	good := loadgen.Plan{BaseURL: "http://127.0.0.1:1", Targets: []loadgen.Target{{SaleID: "s", ItemID: "i"}}, Buyers: 1,
		Clicks: 1, Conns: 1, At: time.Now().Add(time.Minute), Profile: foreign()}
	for name, tc := range map[string]struct {
		mod  func(*loadgen.Plan)
		want string
	}{
		"room":   {func(p *loadgen.Plan) { p.Journey = &loadgen.Room{} }, "the waiting room needs the profile's http.room (fsctl serve's is /api/v1/sales/${sale}/queue): profile shop declares none"},
		"pay":    {func(p *loadgen.Plan) { p.After = &loadgen.AfterPurchase{Pay: 1} }, "the pay follow-up needs the profile's http.pay"},
		"cancel": {func(p *loadgen.Plan) { p.After = &loadgen.AfterPurchase{Cancel: 1} }, "the cancel follow-up needs the profile's http.order"},
		"reveal": {func(p *loadgen.Plan) { p.Journey = &loadgen.Reveal{} }, "http.purchasePath (fsctl serve's is /api/v1/sales/${sale}/items/${item}/purchase-path): profile shop declares none; drop --reveal on"},
		"poll":   {func(p *loadgen.Plan) { p.Poll = &loadgen.OrderPoll{Interval: time.Second, Wait: time.Second} }, "order polling needs the profile's http.order"},
	} {
		p := good
		tc.mod(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		declared := *foreign()
		declared.HTTP = profile.Default().HTTP
		p.Profile = &declared
		if err := p.Validate(); err != nil {
			t.Errorf("%s with the endpoints declared: %v", name, err)
		}
	}
	abandon := good
	abandon.After = &loadgen.AfterPurchase{} // every hold abandoned: nothing is sent
	if err := abandon.Validate(); err != nil {
		t.Errorf("abandoning on a profile without pay or order: %v", err)
	}
}

func TestRecordProtocolNamesTLSFromTheURL(t *testing.T) {
	for _, tc := range []struct{ url, proto, want string }{
		{"http://shop.example/buy", "HTTP/1.1", "HTTP/1.1"},
		{"https://shop.example/buy", "HTTP/1.1", "HTTP/1.1 over TLS"},
		{"HTTPS://shop.example/buy", "HTTP/1.1", "HTTP/1.1 over TLS"},
		{"https://shop.example/buy", "HTTP/2.0", "h2"},
		{"http://shop.example/buy", "HTTP/2.0", "h2c"},
		{"/buy", "HTTP/1.1", "HTTP/1.1"},
		{"https", "HTTP/1.1", "HTTP/1.1"},
		{"https://shop.example/buy", "", ""},
	} {
		if got := (loadgen.Record{URL: tc.url, Proto: tc.proto}).Protocol(); got != tc.want {
			t.Errorf("Protocol of %s over %q = %q, want %q", tc.url, tc.proto, got, tc.want)
		}
	}
}
