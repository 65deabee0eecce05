package profile

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// HTTP GETs each endpoint the profile declares under base; an empty base is a skip per endpoint.
func (f Fit) HTTP(ctx context.Context, client *http.Client, base string) []finding.Finding {
	h := f.P.HTTP
	var out []finding.Finding
	for _, p := range []struct{ field, path string }{{"http.health", h.Health}, {"http.salePage", h.SalePage}, {"http.metrics", h.Metrics}, {"http.admin", h.Admin}} {
		switch {
		case p.path == "":
			continue
		case base == "":
			out = append(out, found(p.field, finding.Skip, "no --target to reach", "give --target"))
			continue
		}
		url := f.P.Endpoint(base, p.path, f.Sale)
		status, err := get(ctx, client, url)
		switch {
		case err != nil:
			out = append(out, found(p.field, finding.Fail, fmt.Sprintf("GET %s: %v", url, err), "is the checkout running at --target?"))
		case p.field == "http.admin" && status < 500:
			out = append(out, found(p.field, finding.Pass, fmt.Sprintf("GET %s answered %d (the operator API answers)", url, status), ""))
		case status/100 != 2:
			out = append(out, found(p.field, finding.Fail, fmt.Sprintf("GET %s answered %d", url, status), f.fix(p.field)+", or the target's readiness"))
		default:
			out = append(out, found(p.field, finding.Pass, fmt.Sprintf("GET %s answered %d", url, status), ""))
		}
	}
	return out
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

// Keys reads every key of every shard of an item: the stock counter exists, the buyers and holds
// are a set, hash or sorted set, and each shard's keys share one hash slot.
func (f Fit) Keys(ctx context.Context, st *Stocks, item string, shards int) []finding.Finding {
	inv, err := st.Inventory(ctx, f.Sale, item, shards)
	if err != nil {
		return []finding.Finding{found("redis.stock", finding.Fail, err.Error(), "fix redis.stock: it must name the item's stock counter")}
	}
	var out []finding.Finding
	for _, sh := range inv.Shards {
		k := sh.Keys
		if !sh.StockSet {
			out = append(out, found("redis.stock", finding.Fail, fmt.Sprintf("item %s shard %d: %s does not exist", item, sh.Keys.Shard, k.Stock),
				"fix redis.stock (or redis.tag), or preload the item before the sale"))
		} else {
			out = append(out, found("redis.stock", finding.Pass, fmt.Sprintf("%s = %d", k.Stock, sh.Stock), ""))
		}
		for _, s := range []struct{ field, key, typ string }{{"redis.buyers", k.Buyers, sh.BuyersType}, {"redis.holds", k.Holds, sh.HoldsType}} {
			switch {
			case s.key == "":
			case s.typ == "none":
				out = append(out, found(s.field, finding.Warn, fmt.Sprintf("%s does not exist (fine while nothing is sold)", s.key), ""))
			case s.typ == "set" || s.typ == "hash" || s.typ == "zset":
				out = append(out, found(s.field, finding.Pass, fmt.Sprintf("%s is a %s", s.key, s.typ), ""))
			default:
				out = append(out, found(s.field, finding.Fail, fmt.Sprintf("%s is a %s: want a set, hash or sorted set", s.key, s.typ), f.fix(s.field)))
			}
		}
		for _, key := range k.Names()[1:] {
			if redisconn.KeySlot(key) != redisconn.KeySlot(k.Stock) {
				out = append(out, found("redis.tag", finding.Warn, fmt.Sprintf("%s and %s are in different hash slots: one Lua script cannot touch both on a cluster", k.Stock, key),
					"give the keys of one item one hash tag, e.g. {item:${item}}"))
			}
		}
	}
	return out
}

// Kafka finds the order log's topic and consumer group; no brokers is a skip.
func (f Fit) Kafka(ctx context.Context, conn kafkaconn.Conn) []finding.Finding {
	k := f.P.Kafka
	switch {
	case k.Topic == "":
		return nil
	case len(conn.Brokers) == 0:
		return []finding.Finding{found("kafka.topic", finding.Skip, "no --kafka-brokers to reach", "")}
	}
	client, closeIdle, err := conn.Client(3 * time.Second)
	if err != nil {
		return []finding.Finding{found("kafka.topic", finding.Fail, err.Error(), "fix the Kafka connection (--kafka-* / FSCTL_KAFKA_*)")}
	}
	defer closeIdle()
	offs, err := kafkaconn.TopicOffsets(ctx, client, k.Topic)
	if err != nil {
		return []finding.Finding{found("kafka.topic", finding.Fail, conn.Explain(err).Error(), "fix kafka.topic, or create the topic")}
	}
	out := []finding.Finding{found("kafka.topic", finding.Pass, fmt.Sprintf("%s: %d partitions, %d messages", k.Topic, len(offs.End), offs.Messages()), "")}
	if k.Group == "" {
		return out
	}
	g, err := kafkaconn.GroupLag(ctx, client, k.Topic, k.Group)
	switch {
	case err != nil:
		return append(out, found("kafka.group", finding.Fail, err.Error(), f.fix("kafka.group")))
	case g.Members == 0:
		return append(out, found("kafka.group", finding.Warn, fmt.Sprintf("%s has no members (lag %d): is the consumer running?", k.Group, g.Lag), "start the target's order consumer"))
	}
	return append(out, found("kafka.group", finding.Pass, fmt.Sprintf("%s: %d member(s), lag %d", k.Group, g.Members, g.Lag), ""))
}
