package preflight

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fsctl/fsctl/events"
)

// The checks of a foreign target: one fsctl did not write, read only through what its profile
// declares. What needs fsctl serve's own tables, scripts or endpoints is a skip saying why.

// noFix is the fix text of a problem preflight will not repair on a foreign target.
const noFix = "the profile declares no fix for this"

func notDeep(group, check, why string) []Result {
	return []Result{{Group: group, Check: check, Status: Skip, Detail: why}}
}

// foreignKafka: the profile's order topic (and dead-letter topic) exist with leaders, and the
// group that writes the orders is there and keeping up.
func foreignKafka(ctx context.Context, e *env) []Result {
	if e.cfg.OrdersTopic == "" {
		return notDeep("kafka", "order log", "the profile declares no order log (kafka.topic)")
	}
	if e.kafka == nil {
		return needs("kafka", "Kafka")
	}
	out := []Result{foreignTopic(topicCheck(e, e.cfg.OrdersTopic, "orders topic", 0))}
	if e.cfg.DeadLetterTopic != "" {
		out = append(out, foreignTopic(topicCheck(e, e.cfg.DeadLetterTopic, "dead-letter topic", 0)))
	}
	t := findTopic(e.meta, e.cfg.OrdersTopic)
	if t == nil || t.Error != nil {
		return out
	}
	out = append(out, durability(ctx, e, *t))
	if e.cfg.ConsumerGroup == "" {
		return append(out, Result{Group: "kafka", Check: "consumer group", Status: Skip,
			Detail: "the profile declares no kafka.group"})
	}
	return append(out, consumerGroup(ctx, e, *t))
}

// foreignTopic drops the repair: the target creates its topics its own way.
func foreignTopic(r Result) Result {
	if r.repair != nil {
		r.repair, r.Repair = nil, ""
		r.Fix = "create it as the target expects, or correct kafka.topic / kafka.deadLetter in the profile (" + noFix + ")"
	}
	return r
}

// orderLag is how many orders the target's consumer has yet to write; 0 when the profile has no
// order log or it cannot be read (the kafka group reports that).
func (e *env) orderLag(ctx context.Context) int64 {
	if e.kafka == nil || e.cfg.OrdersTopic == "" || e.cfg.ConsumerGroup == "" {
		return 0
	}
	g, err := events.GroupLag(ctx, e.kafka, e.cfg.OrdersTopic, e.cfg.ConsumerGroup)
	if err != nil {
		return 0
	}
	return g.Lag
}

// foreignServers: each --server's health endpoint answers 2xx.
func foreignServers(ctx context.Context, e *env) []Result {
	if len(e.cfg.Servers) == 0 {
		return notDeep("servers", "servers", "no --server given")
	}
	if e.prof.HTTP.Health == "" {
		return notDeep("servers", "servers", "the profile declares no health endpoint (http.health)")
	}
	out := make([]Result, len(e.cfg.Servers))
	var wg sync.WaitGroup
	for i, base := range e.cfg.Servers {
		wg.Go(func() { out[i] = health(ctx, e, base) })
	}
	wg.Wait()
	return append(out, Result{Group: "servers", Check: "versions and sale view", Status: Skip,
		Detail: "they read fsctl serve's /readyz and sale page; not available for this target"})
}

func health(ctx context.Context, e *env, base string) Result {
	base = strings.TrimRight(base, "/")
	r := Result{Group: "servers", Check: "ready " + base}
	url := e.prof.Endpoint(base, e.prof.HTTP.Health, e.cfg.SaleID)
	resp, err := get(ctx, e.cfg.HTTP, url)
	if err != nil {
		r.Status, r.Detail, r.Fix = Fail, err.Error(), "start the checkout there, or correct --server"
		return r
	}
	resp.Body.Close()
	r.Detail = fmt.Sprintf("GET %s answered %d", e.prof.HTTP.Health, resp.StatusCode)
	if resp.StatusCode/100 != 2 {
		r.Status, r.Fix = Fail, "the target says it is not healthy: look at its health endpoint's answer and logs"
		return r
	}
	r.Status = Pass
	return r
}

func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return resp, nil
}

// healthClock reads a foreign server's clock from the Date header of its health answer. Date
// has one-second resolution: the server's time lies in [Date, Date+1s), so the offset is how far
// this machine's midpoint falls outside that second (0 inside it), and the bound widens by half
// a second.
func (e *env) healthClock(ctx context.Context, base string) clockReading {
	name := "server " + base + " (Date header, 1 s resolution)"
	url := e.prof.Endpoint(strings.TrimRight(base, "/"), e.prof.HTTP.Health, e.cfg.SaleID)
	return best(func() clockReading {
		sent := e.cfg.Now()
		resp, err := get(ctx, e.cfg.HTTP, url)
		got := e.cfg.Now()
		if err != nil {
			return clockReading{name: name, err: err}
		}
		resp.Body.Close()
		date, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			return clockReading{name: name, err: fmt.Errorf("GET %s has no Date header to read the clock from", url)}
		}
		rtt := got.Sub(sent)
		mid := sent.Add(rtt / 2)
		var offset time.Duration
		switch {
		case mid.Before(date):
			offset = mid.Sub(date)
		case !mid.Before(date.Add(time.Second)):
			offset = mid.Sub(date.Add(time.Second))
		}
		return clockReading{name: name, offset: offset, rtt: rtt + time.Second}
	})
}
