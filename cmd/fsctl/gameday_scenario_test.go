package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/harness/netfault"
)

// TestScenarioDrillRefusesBeforeAnyLoad: a drill scenario whose steps name a proxy the Toxiproxy
// server does not have, a program not on PATH, or a fault of the local stack's, or that needs a
// Toxiproxy nobody named, is refused with exit 2 before a buyer arrives (the target here does not
// even listen).
func TestScenarioDrillRefusesBeforeAnyLoad(t *testing.T) {
	tp, err := netfault.Local()
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if _, err := tp.Create("shop-redis", "127.0.0.1:0", "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envToxiproxy, "")
	const head = "name: typo\nbuyers: 10\nrate: 5/s\nsteps:\n"
	for _, c := range []struct {
		name, steps string
		args        []string
		says        string
	}{
		{"a proxy the server lacks", "  - {at: 1s, fault: toxic, proxy: shop-redsi, toxic: latency, attributes: {latency: 100}}\n",
			[]string{"--toxiproxy", tp.URL}, `has no proxy "shop-redsi" (it has: shop-redis)`},
		{"no toxiproxy", "  - {at: 1s, fault: toxic, proxy: shop-redis, toxic: latency}\n", nil, "give --toxiproxy URL"},
		{"a program not on PATH", "  - {at: 1s, fault: exec, command: [kubectl-typo, delete, pod]}\n", nil, "step (line 5): exec `kubectl-typo delete pod`: kubectl-typo not found on PATH"},
		{"a fault of the local stack", "  - {at: 1s, fault: kafka-kill}\n", nil, "kafka-kill acts on the local stack fsctl started; a drill against your own system takes exec, http, toxic steps"},
		{"a toxic on the local game day's proxy", "  - {at: 1s, fault: toxic, service: redis, toxic: latency}\n", nil, "name the proxy of your Toxiproxy it goes on"},
		{"a sale of fsctl's", "  - {at: 1s, fault: http, url: http://x}\nsale: {items: [{id: a, quantity: 1}]}\n", nil, "sale: not in a drill"},
	} {
		file := filepath.Join(t.TempDir(), "drill.yaml")
		if err := os.WriteFile(file, []byte(head+c.steps), 0o600); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"gameday", "drill", "-f", file, "--sale", "s", "--target", "http://127.0.0.1:1",
			"--redis-url", "redis://127.0.0.1:1/0", "--postgres-url", "postgres://x@127.0.0.1:1/x"}, c.args...)
		_, code, err := runCLI(t, args...)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: exit %d, %v; want exit 2 saying %q", c.name, code, err, c.says)
		}
	}
	if n, err := tp.Sweep(); err != nil || n != 0 {
		t.Errorf("a refused drill touched the Toxiproxy: %d %v", n, err)
	}
}
