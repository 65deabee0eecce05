package profile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/finding"
)

// CheckReport is a profile checked against a live target.
type CheckReport struct {
	Profile string      `json:"profile"`
	Source  string      `json:"source"`
	Sale    string      `json:"sale"`
	// Lines are the findings, one per profile field tried (the field is the finding's check).
	Lines []finding.Finding `json:"lines"`
}

// Failed reports whether any line failed.
func (r CheckReport) Failed() bool { return !finding.OK(r.Lines, false) }

// CheckConfig says which sale and target to check the profile against.
type CheckConfig struct {
	Sale string
	// Items restricts the check to these items; default: what sql.items returns.
	Items []string
	// Base is the checkout's base URL; empty skips the HTTP endpoints.
	Base string
	// Secret replaces an hs256 profile's secret.
	Secret string
	// Brokers reach the order log the profile names; empty skips it.
	Brokers []string
	// Client makes the HTTP probes; nil means a 3 s client.
	Client *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// probeUser is the buyer the check renders requests and queries for; nothing is ever bought.
const probeUser = "fsctl-profile-check"

// Check tries everything the profile declares against the live target, in order: the token,
// the purchase template (rendered, never sent), the HTTP endpoints, every query for every item,
// every key of every shard, and the order log. It never changes the target.
func (t *Target) Check(ctx context.Context, cfg CheckConfig) CheckReport {
	c := checker{t: t, cfg: cfg, r: CheckReport{Profile: t.P.Name, Source: t.P.Source(), Sale: cfg.Sale}}
	if c.cfg.Client == nil {
		c.cfg.Client = &http.Client{Timeout: 3 * time.Second}
	}
	if c.cfg.Now == nil {
		c.cfg.Now = time.Now
	}
	token := c.token()
	items := c.items(ctx)
	first := "ITEM"
	if len(items) > 0 {
		first = items[0]
	}
	c.purchase(first, token)
	c.http(ctx)
	limit := 1
	if len(items) > 0 {
		limit = c.limit(ctx)
	}
	for _, item := range items {
		shards := c.item(ctx, item, limit)
		c.keys(ctx, item, shards)
	}
	c.kafka(ctx)
	return c.r
}

type checker struct {
	t   *Target
	cfg CheckConfig
	r   CheckReport
}

func (c *checker) add(field string, status finding.Status, detail, fix string) {
	c.r.Lines = append(c.r.Lines, finding.Finding{Check: field, Status: status, Detail: detail, Fix: fix})
}

func (c *checker) token() string {
	m, err := c.t.P.Minter(c.cfg.Secret)
	if err != nil {
		c.add("token", finding.Fail, err.Error(), "give the token section what it needs (secretEnv's variable, keyFile, file)")
		return "TOKEN"
	}
	tok, err := m.Mint(probeUser, c.cfg.Sale, c.cfg.Now(), c.t.P.TokenTTL())
	if users := m.Users(); users != nil {
		tok, err = m.Mint(users[0], c.cfg.Sale, c.cfg.Now(), c.t.P.TokenTTL())
		c.add("token.file", finding.Pass, fmt.Sprintf("%d buyers' tokens", len(users)), "")
		return tok
	}
	if err != nil {
		c.add("token", finding.Fail, err.Error(), "")
		return "TOKEN"
	}
	c.add("token", finding.Pass, fmt.Sprintf("%s token for %s (%d bytes)", c.t.P.Token.Type, probeUser, len(tok)), "")
	return tok
}

func (c *checker) purchase(item, token string) {
	base := c.cfg.Base
	if base == "" {
		base = "http://TARGET"
	}
	req, err := c.t.P.PurchaseRequest(base, Buy{Sale: c.cfg.Sale, Item: item, User: probeUser, Key: "fsctl-check-1", Token: token})
	if err != nil {
		c.add("purchase", finding.Fail, err.Error(), "fix purchase.url")
		return
	}
	body := Render(c.t.P.Purchase.Body, Vars{"sale": c.cfg.Sale, "item": item, "user": probeUser, "key": "fsctl-check-1", "token": token, "buyer": "0"})
	if strings.Contains(req.Header.Get("Content-Type"), "json") && body != "" && !json.Valid([]byte(body)) {
		c.add("purchase.body", finding.Fail, fmt.Sprintf("Content-Type is JSON but the rendered body is not: %s", body), "fix purchase.body")
		return
	}
	c.add("purchase", finding.Pass, fmt.Sprintf("%s %s; headers %s; %d-byte body (rendered, never sent)",
		req.Method, req.URL.RequestURI(), strings.Join(sortedKeys(req.Header), ", "), len(body)), "")
}

func (c *checker) http(ctx context.Context) {
	paths := []struct{ field, path string }{
		{"http.health", c.t.P.HTTP.Health}, {"http.salePage", c.t.P.HTTP.SalePage}, {"http.metrics", c.t.P.HTTP.Metrics}, {"http.admin", c.t.P.HTTP.Admin},
	}
	for _, p := range paths {
		switch {
		case p.path == "":
			continue
		case c.cfg.Base == "":
			c.add(p.field, finding.Skip, "no --target to reach", "give --target")
			continue
		}
		url := c.t.P.Endpoint(c.cfg.Base, p.path, c.cfg.Sale)
		status, err := get(ctx, c.cfg.Client, url)
		switch {
		case err != nil:
			c.add(p.field, finding.Fail, fmt.Sprintf("GET %s: %v", url, err), "is the checkout running at --target?")
		case p.field == "http.admin" && status < 500:
			c.add(p.field, finding.Pass, fmt.Sprintf("GET %s answered %d (the operator API answers)", url, status), "")
		case status/100 != 2:
			c.add(p.field, finding.Fail, fmt.Sprintf("GET %s answered %d", url, status), "fix "+p.field+" or the target's readiness")
		default:
			c.add(p.field, finding.Pass, fmt.Sprintf("GET %s answered %d", url, status), "")
		}
	}
}

func get(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (c *checker) items(ctx context.Context) []string {
	if err := c.t.Pool().Ping(ctx); err != nil {
		c.add("sql", finding.Fail, fmt.Sprintf("PostgreSQL unreachable: %v", err), "check --postgres-url")
		return nil
	}
	items, err := c.t.Items(ctx, c.cfg.Sale, c.cfg.Items)
	if err != nil {
		c.add("sql.items", finding.Fail, err.Error(), "fix sql.items (or give --item)")
		return nil
	}
	if len(c.cfg.Items) == 0 {
		c.add("sql.items", finding.Pass, fmt.Sprintf("%d items: %s", len(items), clip(items, 5)), "")
	}
	return items
}

// limit reads the per-user limit the live-buyers query is judged against.
func (c *checker) limit(ctx context.Context) int {
	n, err := c.t.DB.PerUserLimit(ctx, c.cfg.Sale)
	switch {
	case c.t.P.SQL.PerUserLimit == "":
	case err != nil:
		c.add("sql.perUserLimit", finding.Fail, err.Error(), "fix sql.perUserLimit so it runs on the target")
	case n < 1:
		c.add("sql.perUserLimit", finding.Fail, fmt.Sprintf("per-user limit %d: want at least 1", n), "fix sql.perUserLimit")
	default:
		c.add("sql.perUserLimit", finding.Pass, fmt.Sprintf("per-user limit %d", n), "")
	}
	return max(n, 1)
}

// item runs every per-item query (ProbeItem judges them) and returns the item's shard count.
func (c *checker) item(ctx context.Context, item string, limit int) int {
	ip := c.t.DB.ProbeItem(ctx, c.cfg.Sale, item, probeUser, limit)
	lines := []struct {
		field, detail string
		declared      bool
	}{
		{"sql.item", fmt.Sprintf("item %s: quantity %d, sold %d", item, ip.Quantity, ip.Sold), true},
		{"sql.shards", fmt.Sprintf("item %s: %d shards", item, ip.Shards), c.t.P.Sharded()},
		{"sql.live", fmt.Sprintf("item %s: %d live orders", item, ip.Live), true},
		{"sql.paid", fmt.Sprintf("item %s: %d paid orders", item, ip.Paid), c.t.P.SQL.Paid != ""},
		{"sql.userOrders", fmt.Sprintf("item %s: %d orders of %s, columns id and status", item, ip.ProbeOrders, probeUser), true},
		{"sql.liveBuyers", fmt.Sprintf("item %s: %d live buyers", item, len(ip.Buyers)), c.t.P.SQL.LiveBuyers != ""},
	}
	for _, l := range lines {
		pr, bad := ip.Problem(l.field)
		switch {
		case !l.declared:
		case !bad:
			c.add(l.field, finding.Pass, l.detail, "")
		case pr.Warn:
			c.add(l.field, finding.Warn, pr.Err.Error(), "run again; if they still differ, fix "+l.field)
		case pr.Query:
			c.add(l.field, finding.Fail, pr.Err.Error(), "fix "+l.field+" so it runs on the target")
		default:
			c.add(l.field, finding.Fail, pr.Err.Error(), "fix "+l.field+": "+queryPurpose[strings.TrimPrefix(l.field, "sql.")])
		}
	}
	return max(ip.Shards, 1)
}

func (c *checker) keys(ctx context.Context, item string, shards int) {
	if err := c.t.Redis().Ping(ctx).Err(); err != nil {
		c.add("redis", finding.Fail, fmt.Sprintf("Redis unreachable: %v", err), "check --redis-url")
		return
	}
	inv, err := c.t.Stocks.Inventory(ctx, c.cfg.Sale, item, shards)
	if err != nil {
		c.add("redis.stock", finding.Fail, err.Error(), "fix redis.stock: it must name the item's stock counter")
		return
	}
	for _, sh := range inv.Shards {
		k := sh.Keys
		if !sh.StockSet {
			c.add("redis.stock", finding.Fail, fmt.Sprintf("item %s shard %d: %s does not exist", item, sh.Keys.Shard, k.Stock),
				"fix redis.stock (or redis.tag), or preload the item before the sale")
		} else {
			c.add("redis.stock", finding.Pass, fmt.Sprintf("%s = %d", k.Stock, sh.Stock), "")
		}
		for _, f := range []struct{ field, key, typ string }{{"redis.buyers", k.Buyers, sh.BuyersType}, {"redis.holds", k.Holds, sh.HoldsType}} {
			switch {
			case f.key == "":
			case f.typ == "none":
				c.add(f.field, finding.Warn, fmt.Sprintf("%s does not exist (fine while nothing is sold)", f.key), "")
			case f.typ == "set" || f.typ == "hash" || f.typ == "zset":
				c.add(f.field, finding.Pass, fmt.Sprintf("%s is a %s", f.key, f.typ), "")
			default:
				c.add(f.field, finding.Fail, fmt.Sprintf("%s is a %s: want a set, hash or sorted set", f.key, f.typ), "fix "+f.field)
			}
		}
		for _, key := range k.Names()[1:] {
			if KeySlot(key) != KeySlot(k.Stock) {
				c.add("redis.tag", finding.Warn, fmt.Sprintf("%s and %s are in different hash slots: one Lua script cannot touch both on a cluster", k.Stock, key),
					"give the keys of one item one hash tag, e.g. {item:${item}}")
			}
		}
	}
}

func (c *checker) kafka(ctx context.Context) {
	k := c.t.P.Kafka
	switch {
	case k.Topic == "":
		return
	case len(c.cfg.Brokers) == 0:
		c.add("kafka.topic", finding.Skip, "no --kafka-brokers to reach", "")
		return
	}
	client := &kafka.Client{Addr: kafka.TCP(c.cfg.Brokers...), Timeout: 3 * time.Second}
	offs, err := events.TopicOffsets(ctx, client, k.Topic)
	if err != nil {
		c.add("kafka.topic", finding.Fail, err.Error(), "fix kafka.topic, or create the topic")
		return
	}
	c.add("kafka.topic", finding.Pass, fmt.Sprintf("%s: %d partitions, %d messages", k.Topic, len(offs.End), offs.Messages()), "")
	if k.Group == "" {
		return
	}
	g, err := events.GroupLag(ctx, client, k.Topic, k.Group)
	switch {
	case err != nil:
		c.add("kafka.group", finding.Fail, err.Error(), "fix kafka.group")
	case g.Members == 0:
		c.add("kafka.group", finding.Warn, fmt.Sprintf("%s has no members (lag %d): is the consumer running?", k.Group, g.Lag), "start the target's order consumer")
	default:
		c.add("kafka.group", finding.Pass, fmt.Sprintf("%s: %d member(s), lag %d", k.Group, g.Members, g.Lag), "")
	}
}

func clip(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:n], ", ") + fmt.Sprintf(" and %d more", len(s)-n)
}

// Render prints the check as a table, then a verdict.
func (r CheckReport) Render(w io.Writer) error {
	fmt.Fprintf(w, "profile %s (%s) against sale %s\n", r.Profile, r.Source, r.Sale)
	if err := finding.Table(w, r.Lines); err != nil {
		return err
	}
	verdict := "PROFILE OK: every template renders, every query runs, every key exists"
	if r.Failed() {
		verdict = "PROFILE DOES NOT FIT THE TARGET: see the failed lines"
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}

// WriteJSON writes the check as one JSON document.
func (r CheckReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
