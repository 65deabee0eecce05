package profile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/profiles"
)

func TestShippedProfilesParse(t *testing.T) {
	names, err := fs.Glob(profiles.Files, "*.yaml")
	if err != nil || len(names) < 2 {
		t.Fatalf("shipped profiles: %v %v", names, err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			p, err := Load(filepath.Join("..", "..", "..", "profiles", name))
			if err != nil {
				t.Fatal(err)
			}
			if p.Name == "" || p.Classify.Empty() || p.SQL.Live == "" {
				t.Fatalf("profile %s parsed empty: %+v", name, p)
			}
		})
	}
	d := Default()
	if !d.Bundled() || !d.Sharded() || d.Token.Type != TokenHS256 || d.Source() != "built-in fsctl.yaml" {
		t.Fatalf("default profile: %+v", d)
	}
}

// TestBundledDeclaresItsJourneys: the bundled profile declares the endpoints of every buyer
// journey beyond the purchase, and they render to fsctl serve's routes.
func TestBundledDeclaresItsJourneys(t *testing.T) {
	d := Default()
	v := Vars{"sale": "s1", "item": "hot", "order": "o-1"}
	for _, e := range []struct{ field, tmpl, want string }{
		{"room", d.HTTP.Room, "http://h/api/v1/sales/s1/queue"},
		{"order", d.HTTP.Order, "http://h/api/v1/orders/o-1"},
		{"pay", d.HTTP.Pay, "http://h/api/v1/orders/o-1/pay"},
		{"purchasePath", d.HTTP.PurchasePath, "http://h/api/v1/sales/s1/items/hot/purchase-path"},
	} {
		if got := Route("http://h/", e.tmpl, v); got != e.want {
			t.Errorf("http.%s %q renders %q, want %q", e.field, e.tmpl, got, e.want)
		}
	}
	if OrBundled(nil).Name != d.Name || OrBundled(&Profile{Name: "shop"}).Name != "shop" {
		t.Error("OrBundled: nil is the bundled profile, any other is itself")
	}
	foreign, err := Parse([]byte(base), "base", "")
	if err != nil {
		t.Fatal(err)
	}
	if foreign.Bundled() || foreign.HTTP != (HTTP{}) {
		t.Errorf("a profile without deep or http: bundled %v, http %+v", foreign.Bundled(), foreign.HTTP)
	}
}

// base is a valid profile the cases below break one field of.
const base = `name: shop
purchase:
  url: /buy/${item}
  headers:
    Authorization: Bearer ${token}
token:
  type: hs256
  secretEnv: SHOP_SECRET
  claims: {sub: "${user}"}
classify:
  rules: [{status: 202, outcome: RESERVED}]
redis:
  tag: "{item:${item}}"
  stock: "${tag}:stock"
sql:
  items: SELECT id FROM items
  item: SELECT quantity, sold FROM items WHERE id = @item
  live: SELECT count(*) FROM orders WHERE item_id = @item
  userOrders: SELECT id, status FROM orders WHERE item_id = @item AND user_id = @user
`

func TestParseNamesFieldAndLine(t *testing.T) {
	if _, err := Parse([]byte(base), "base", ""); err != nil {
		t.Fatalf("base profile: %v", err)
	}
	cases := []struct {
		name, old, new, want string
	}{
		{"no name", "name: shop", "description: x", "line 1: name: missing"},
		{"bad method", "  url: /buy/${item}", "  method: FETCH\n  url: /buy/${item}", `line 3: purchase.method: "FETCH"`},
		{"unknown placeholder", "/buy/${item}", "/buy/${itme}", "line 3: purchase.url: unknown placeholder ${itme}"},
		{"unclosed placeholder", "Bearer ${token}", "Bearer ${token", "purchase.headers.Authorization: \"Bearer ${token\": ${ without a closing }"},
		{"relative url", "url: /buy/${item}", "url: buy/${item}", "purchase.url: \"buy/${item}\": want a path"},
		{"token type", "type: hs256", "type: hs512", `line 7: token.type: "hs512": want hs256, rs256, file or none`},
		{"hs256 without secret", "  secretEnv: SHOP_SECRET\n", "", "token.secretEnv: missing"},
		{"rs256 without key", "type: hs256", "type: rs256", "token.keyFile: missing"},
		{"none with token", "type: hs256", "type: none", "purchase.headers.Authorization: uses ${token} but token.type is none"},
		{"claim placeholder", `sub: "${user}"`, `sub: "${item}"`, "line 9: token.claims.sub: unknown placeholder ${item}"},
		{"no classify", "classify:\n  rules: [{status: 202, outcome: RESERVED}]\n", "", "classify: missing"},
		{"no stock key", "  stock: \"${tag}:stock\"\n", "", "redis.stock: missing"},
		{"tag missing", `  tag: "{item:${item}}"` + "\n", "", "line 13: redis.stock: uses ${tag} but redis.tag is not given"},
		{"shard tag without shard", `  tag: "{item:${item}}"`, `  tag: "{item:${item}}"` + "\n  shardTag: \"{item:${item}:x}\"", "redis.shardTag: \"{item:${item}:x}\": must use ${shard}"},
		{"shard tag without query", `  tag: "{item:${item}}"`, `  tag: "{item:${item}}"` + "\n  shardTag: \"{item:${item}:${shard}}\"", "sql.shards: missing"},
		{"no live query", "  live: SELECT count(*) FROM orders WHERE item_id = @item\n", "", "sql.live: missing: the query of how many live orders"},
		{"unknown parameter", "WHERE id = @item", "WHERE id = @itme", "line 17: sql.item: unknown parameter @itme"},
		{"user orders without user", "AND user_id = @user", "", "sql.userOrders: does not use @user"},
		{"bad fix", "sql:", "fix: {stock: reset}\nsql:", `fix.stock: "reset": the only fix is "recount"`},
		{"buyers fix without keys", "sql:", "fix: {buyers: recount}\nsql:", "fix.buyers: recount needs redis.buyers and sql.liveBuyers"},
		{"deep with fix", "name: shop", "name: shop\ndeep: fsctl\nfix: {stock: recount}", "fix: a deep target's stock and buyers are repaired"},
		{"deep other", "name: shop", "name: shop\ndeep: spring", `line 2: deep: "spring": the only deep target is "fsctl"`},
		{"unknown field", "name: shop", "name: shop\nnmae: x", "line 2: nmae: unknown key (did you mean name? known: name, description, deep, purchase"},
		{"unknown nested field", "  secretEnv: SHOP_SECRET", "  secretEnv: SHOP_SECRET\n  keyfile: k.pem", "line 9: token.keyfile: unknown key (did you mean keyFile? known: type, secret, secretEnv, keyFile, keyEnv, issuerEnv, audienceEnv, file, claims, ttl)"},
		{"ttl in words", "  secretEnv: SHOP_SECRET", "  secretEnv: SHOP_SECRET\n  ttl: 2 hours", `line 9: token.ttl: "2 hours" is not a duration: write it like 90s, 10m or 1h30m`},
		{"header not text", "Authorization: Bearer ${token}", "Authorization: [a, b]", "line 5: purchase.headers.Authorization: want a single value, not a list"},
		{"bad health path", "sql:", "http: {health: health}\nsql:", `http.health: "health": want a path starting with /`},
		{"bad room path", "sql:", "http: {room: queue}\nsql:", `http.room: "queue": want a path starting with /`},
		{"room of an item", "sql:", "http: {room: \"/q/${item}\"}\nsql:", "http.room: unknown placeholder ${item}: this template may use ${sale}"},
		{"order of a user", "sql:", "http: {order: \"/o/${user}\"}\nsql:", "http.order: unknown placeholder ${user}: this template may use ${sale}, ${item}, ${order}"},
		{"purchase path of an order", "sql:", "http: {purchasePath: \"/p/${order}\"}\nsql:", "http.purchasePath: unknown placeholder ${order}"},
		{"unknown http field", "sql:", "http: {queue: /q}\nsql:", "http.queue: unknown key"},
		{"negative limit", "sql:", "limits: {perUser: -1}\nsql:", "limits.perUser: -1: must be at least 1"},
		{"kafka login without brokers", "sql:", "kafka: {sasl: scram-sha-512, user: u, passwordEnv: P}\nsql:", "kafka.brokers: missing"},
		{"kafka broker without port", "sql:", "kafka: {brokers: [b1]}\nsql:", `kafka.brokers: "b1" is not host:port`},
		{"kafka unknown mechanism", "sql:", "kafka: {brokers: [b1:9096], sasl: gssapi, user: u, passwordEnv: P}\nsql:", `kafka.sasl: "gssapi": want plain`},
		{"kafka login without password", "sql:", "kafka: {brokers: [b1:9096], sasl: scram-sha-512, user: u}\nsql:", "kafka.passwordEnv: missing"},
		{"kafka password twice", "sql:", "kafka: {brokers: [b1:9096], sasl: scram-sha-512, user: u, passwordEnv: P, passwordFile: f}\nsql:", "kafka.passwordFile: give passwordEnv or passwordFile, not both"},
		{"kafka password inline", "sql:", "kafka: {brokers: [b1:9096], password: hunter2}\nsql:", "kafka.password: unknown key (known: topic, deadLetter, group, brokers"},
		{"kafka plain in the clear", "sql:", "kafka: {brokers: [b1:9096], sasl: plain, user: u, passwordEnv: P}\nsql:", "kafka.sasl: plain sends the password in the clear"},
		{"kafka ca not there", "sql:", "kafka: {brokers: [b1:9096], ca: /nonexistent/ca.pem}\nsql:", "kafka.ca: /nonexistent/ca.pem"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(base, c.old, c.new, 1)
			if doc == base {
				t.Fatalf("case does not change the profile: %q not found", c.old)
			}
			_, err := Parse([]byte(doc), "case", "")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "profile.") || strings.Contains(err.Error(), "!!") {
				t.Fatalf("names a Go type: %v", err)
			}
		})
	}
	if _, err := Parse(nil, "empty", ""); err == nil || !strings.Contains(err.Error(), "the file is empty") {
		t.Fatalf("empty profile: %v", err)
	}
}

func TestParseFieldErrorIsTyped(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(base, "type: hs256", "type: x", 1)), "t", "")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "token.type" || fe.Line != 7 {
		t.Fatalf("want a FieldError at token.type line 7, got %#v", err)
	}
}

// TestLoadTellsUnreadableFromWrong: a missing file is the file system's error, a file read but
// wrong is a *FieldError naming the file once.
func TestLoadTellsUnreadableFromWrong(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "nope.yaml"))
	var fe *FieldError
	if !errors.Is(err, os.ErrNotExist) || errors.As(err, &fe) {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(base, "name: shop", "name: shop\nnmae: x", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), bad+": line 2: nmae: unknown key") || strings.Count(err.Error(), bad) != 1 {
		t.Fatalf("wrong file: %v", err)
	}
}

func TestRenderAndKeys(t *testing.T) {
	d := Default()
	// The bundled profile names exactly the keys fsctl serve's scripts use, salted tags included.
	for _, n := range []int{1, 3} {
		for i, k := range d.Keys("bf", "tv", n) {
			want := stock.ShardKeys("bf", "tv", i, n)
			if k.Stock != want.Stock() || k.Buyers != want.Buyers() || k.Holds != want.Holds() {
				t.Fatalf("shard %d of %d keys %+v, want stock %s", i, n, k, want.Stock())
			}
		}
	}
	if k := d.Keys("bf", "tv", 1)[0]; k.Stock != "{fs:bf:tv}:stock" {
		t.Fatalf("an unsharded item's stock key %q, want {fs:bf:tv}:stock", k.Stock)
	}
	req, err := d.PurchaseRequest("http://h:1/", Buy{Sale: "bf", Item: "tv", User: "u", Key: "k1", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.String() != "http://h:1/api/v1/sales/bf/items/tv/purchase" || req.Header.Get("Authorization") != "Bearer tok" ||
		req.Header.Get("Idempotency-Key") != "k1" || req.Method != "POST" || req.Body != nil {
		t.Fatalf("request %s %s %v", req.Method, req.URL, req.Header)
	}
	if got := Render("a${x}b${y}${", Vars{"x": "1"}); got != "a1b${" {
		t.Fatalf("render: %q", got)
	}
}

// TestAppendRenderIsRender: appending a rendering writes what Render returns, after what the
// buffer held, however the template ends.
func TestAppendRenderIsRender(t *testing.T) {
	v := Vars{"user": "ann", "sale": "bf", "token": strings.Repeat("t", 300)}
	for _, tmpl := range []string{"", "plain", "${user}", "a${user}b${sale}c", "Bearer ${token}", "${unknown}x", "x${", "x${user", "${user}${sale}${}", "}${user}}"} {
		for _, prefix := range []string{"", "GET / HTTP/1.1\r\n"} {
			if got, want := string(AppendRender([]byte(prefix), tmpl, v)), prefix+Render(tmpl, v); got != want {
				t.Errorf("AppendRender(%q, %q) = %q, want %q", prefix, tmpl, got, want)
			}
		}
	}
}
