// Package netfault puts network faults between a checkout and the services it uses, through
// Toxiproxy (github.com/Shopify/toxiproxy/v2): a proxy per service, and toxics on it for a
// step's time. The local game day runs a Toxiproxy server in this process (Local); a game day on
// a team's own system drives the Toxiproxy server of their staging through its API (Dial). Either
// way the same client adds and removes the toxics, so what is tried here is what runs there.
//
// Every toxic fsctl adds is named with Prefix; Inject removes its toxic when the time is up or the
// run is interrupted, and Sweep removes any a killed run left behind.
package netfault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Prefix starts the name of every toxic fsctl adds, so Sweep knows its own.
const Prefix = "fsctl-"

// Client drives one Toxiproxy server through its HTTP API.
type Client struct {
	// URL is the server's API (http://host:8474).
	URL string
	api *toxiclient.Client
	// stop ends a server this process runs (Local); nil for another's.
	stop func() error
	seq  atomic.Int64
}

// Dial is a client of the Toxiproxy server at url (host:port or http(s)://host:port), checked by
// asking its version: an address where no Toxiproxy answers is an error naming it.
func Dial(url string) (*Client, error) {
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	c := &Client{URL: url, api: toxiclient.NewClient(url)}
	c.api.UserAgent = "fsctl"
	if _, err := c.api.Version(); err != nil {
		return nil, fmt.Errorf("toxiproxy %s: %w (is its server running? toxiproxy-server -host 0.0.0.0 -port 8474)", url, err)
	}
	return c, nil
}

// Local runs a Toxiproxy server in this process, its API on a free loopback port, until Close.
func Local() (*Client, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// The toxics log through zerolog's global logger, at trace level when it is let: fsctl logs
	// through slog, and a game day's timeline says what the toxics did.
	zerolog.SetGlobalLevel(zerolog.Disabled)
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	h := &http.Server{Handler: server.Routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.Serve(ln) }()
	c, err := Dial("http://" + ln.Addr().String())
	if err != nil {
		_ = h.Close()
		return nil, err
	}
	c.stop = func() error {
		// Clear closes every proxy's listener and connections.
		return errors.Join(server.Collection.Clear(), h.Close())
	}
	return c, nil
}

// Close stops a server Local started (its proxies with it); a client of another's server has
// nothing to stop.
func (c *Client) Close() error {
	if c.stop == nil {
		return nil
	}
	return c.stop()
}

// Proxy is one proxy of the server: clients dial Listen instead of Upstream.
type Proxy struct {
	Name, Listen, Upstream string
	p                      *toxiclient.Proxy
}

// Create makes a proxy named name listening on listen (127.0.0.1:0 picks a free port) for
// upstream, replacing one of that name.
func (c *Client) Create(name, listen, upstream string) (*Proxy, error) {
	if old, err := c.api.Proxy(name); err == nil {
		if err := old.Delete(); err != nil {
			return nil, fmt.Errorf("toxiproxy %s: replace proxy %s: %w", c.URL, name, err)
		}
	}
	p, err := c.api.CreateProxy(name, listen, upstream)
	if err != nil {
		return nil, fmt.Errorf("toxiproxy %s: create proxy %s (%s -> %s): %w", c.URL, name, listen, upstream, err)
	}
	return &Proxy{Name: p.Name, Listen: p.Listen, Upstream: p.Upstream, p: p}, nil
}

// Proxy is the server's proxy named name; an error names the proxies it has, for a scenario's
// typo.
func (c *Client) Proxy(name string) (*Proxy, error) {
	all, err := c.api.Proxies()
	if err != nil {
		return nil, fmt.Errorf("toxiproxy %s: %w", c.URL, err)
	}
	p, ok := all[name]
	if !ok {
		names := make([]string, 0, len(all))
		for n := range all {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("toxiproxy %s has no proxy %q (it has: %s)", c.URL, name, strings.Join(names, ", "))
	}
	return &Proxy{Name: p.Name, Listen: p.Listen, Upstream: p.Upstream, p: p}, nil
}

// Disable closes the proxy's listener and every connection through it, as a service that went
// away; Enable opens it again.
func (p *Proxy) Disable() error { return p.p.Disable() }

// Enable reopens a disabled proxy.
func (p *Proxy) Enable() error { return p.p.Enable() }

// Inject adds toxic t to proxy p, waits for, and removes it: when the time is up, when ctx ends
// (an interrupted run), whatever happened. It returns what it did, for the timeline.
func (c *Client) Inject(ctx context.Context, p *Proxy, t Toxic, d time.Duration) (string, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	var names []string
	for _, stream := range t.streams() {
		name := fmt.Sprintf("%s%s-%s-%d", Prefix, t.Type, stream, c.seq.Add(1))
		attrs := toxiclient.Attributes{}
		for k, v := range t.Attributes {
			attrs[k] = v
		}
		if _, err := p.p.AddToxic(name, t.Type, stream, t.toxicity(), attrs); err != nil {
			err = fmt.Errorf("toxiproxy %s: add %s to %s: %w", c.URL, t, p.Name, err)
			return "", errors.Join(err, c.remove(p, names))
		}
		names = append(names, name)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	if err := c.remove(p, names); err != nil {
		return "", err
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s on %s interrupted, the toxic removed: %w", t, p.Name, ctx.Err())
	}
	return fmt.Sprintf("%s on %s (%s -> %s) for %s, then removed", t, p.Name, p.Listen, p.Upstream, d), nil
}

func (c *Client) remove(p *Proxy, names []string) error {
	var errs []error
	for _, n := range names {
		if err := p.p.RemoveToxic(n); err != nil {
			errs = append(errs, fmt.Errorf("toxiproxy %s: remove %s from %s: %w", c.URL, n, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Sweep removes every toxic of fsctl's (named with Prefix) from the named proxies, all of the
// server's when none is named: what a run killed before its clean-up left behind. It returns how
// many it removed.
func (c *Client) Sweep(proxies ...string) (int, error) {
	all, err := c.api.Proxies()
	if err != nil {
		return 0, fmt.Errorf("toxiproxy %s: %w", c.URL, err)
	}
	removed := 0
	var errs []error
	for name, p := range all {
		if len(proxies) > 0 && !slices.Contains(proxies, name) {
			continue
		}
		for _, t := range p.ActiveToxics {
			if !strings.HasPrefix(t.Name, Prefix) {
				continue // a toxic of somebody else's: not ours to remove
			}
			if err := p.RemoveToxic(t.Name); err != nil {
				errs = append(errs, err)
				continue
			}
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// Toxics lists the toxics now on the proxy named name, by name.
func (c *Client) Toxics(name string) ([]string, error) {
	p, err := c.Proxy(name)
	if err != nil {
		return nil, err
	}
	ts, err := p.p.Toxics()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out, nil
}
