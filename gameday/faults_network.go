package gameday

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/fsctl/fsctl/internal/harness/netfault"
)

// netFault slows or cuts the network between the checkout instances and one service, through the
// game day's Toxiproxy proxy in front of it, for For, then puts it back: latency each way
// (net-delay), a black hole both ways (net-partition), or any toxic a toxic step names.
type netFault struct {
	Service string
	// Proxy, instead of Service, names a proxy of the Toxiproxy server a drill drives
	// (--toxiproxy): one in front of a store of the team's own system.
	Proxy     string
	Latency   time.Duration
	Partition bool
	// Toxic, when set, is the toxic step's own.
	Toxic *netfault.Toxic
	For   time.Duration
}

func (f netFault) Name() string {
	switch {
	case f.Toxic != nil:
		return "toxic"
	case f.Partition:
		return "net-partition"
	}
	return "net-delay"
}

// toxic is what the fault puts on the proxy.
func (f netFault) toxic() netfault.Toxic {
	switch {
	case f.Toxic != nil:
		return *f.Toxic
	case f.Partition:
		return netfault.Partition()
	}
	return netfault.Latency(f.Latency, 0)
}

// on is the proxy the fault acts through: the named one, else the game day's own in front of
// the service.
func (f netFault) on() string { return cmp.Or(f.Proxy, f.Service) }

func (f netFault) Describe() string {
	switch {
	case f.Toxic != nil && f.Proxy != "":
		return fmt.Sprintf("toxic %s on proxy %s for %s", f.Toxic, f.Proxy, f.For)
	case f.Toxic != nil:
		return fmt.Sprintf("toxic %s on the network to %s for %s", f.Toxic, f.Service, f.For)
	case f.Partition:
		return fmt.Sprintf("partition the network to %s for %s", f.Service, f.For)
	}
	return fmt.Sprintf("add %s to the network to %s, each way, for %s", f.Latency, f.Service, f.For)
}

func (f netFault) Apply(ctx context.Context, env *Env) (string, error) {
	px := env.Proxies[f.on()]
	if px == nil || env.Toxiproxy == nil {
		if f.Proxy != "" {
			return "", fmt.Errorf("toxic: no proxy %s (a drill against your own system names the proxies of its --toxiproxy)", f.Proxy)
		}
		return "", fmt.Errorf("%s: no proxy in front of %s (the game day puts one there when a step needs it, on a single node, not a Redis Cluster)", f.Name(), f.Service)
	}
	env.Note("network to %s: %s", f.on(), f.Describe())
	// Inject takes the toxic off whatever happens: a partition left in place would hang the settle.
	note, err := env.Toxiproxy.Inject(ctx, px, f.toxic(), f.For)
	if err != nil {
		return "", err
	}
	env.Note("network to %s back to normal", f.on())
	return note, nil
}
