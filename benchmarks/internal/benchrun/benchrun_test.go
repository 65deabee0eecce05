package benchrun

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// allowedCPUs is the Cpus_allowed_list line of a /proc/<pid>/status.
func allowedCPUs(t *testing.T, status []byte) string {
	t.Helper()
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no Cpus_allowed_list in\n%s", status)
	return ""
}

// TestCommandRunsOnTheCoresGiven: a command given cores runs on them alone, one given none runs
// where this process may.
func TestCommandRunsOnTheCoresGiven(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Fatal("taskset is not installed (apt-get install util-linux)")
	}
	ctx := context.Background()
	pinned, err := Command(ctx, "0", "cat", "/proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := allowedCPUs(t, pinned); got != "0" {
		t.Errorf("pinned to core 0, the command may run on %q", got)
	}
	free, err := Command(ctx, "", "cat", "/proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	own, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := allowedCPUs(t, free), allowedCPUs(t, own); got != want {
		t.Errorf("not pinned, the command may run on %q; this process on %q", got, want)
	}
	if got, want := Pinning(map[string]string{"server": "0-7", "generator": "8-15", "redis": ""}), ", generator on cores 8-15, server on cores 0-7"; got != want {
		t.Errorf("Pinning = %q, want %q", got, want)
	}
}

func TestWrkPurchaseScript(t *testing.T) {
	s := WrkPurchaseScript("tok.en", "/api/v1/sales/s/items/i/purchase")
	for _, want := range []string{`"Bearer tok.en"`, `wrk.format("POST", "/api/v1/sales/s/items/i/purchase")`, `"wrk-" .. tid .. "-" .. n`} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %s:\n%s", want, s)
		}
	}
	if s := WrkPurchaseScript("t", ""); !strings.Contains(s, `wrk.format("POST", nil)`) {
		t.Errorf("no path: want wrk's own URL (nil):\n%s", s)
	}
}

func TestWrkCounts(t *testing.T) {
	report := []byte("Running 5s test @ http://127.0.0.1:1/\n  163456 requests in 5.00s, 30.1MB read\nRequests/sec:  32690.12\n")
	rps, n, err := WrkCounts(report)
	if err != nil || rps != 32690.12 || n != 163456 {
		t.Fatalf("got %v %d %v, want 32690.12 163456", rps, n, err)
	}
	for _, bad := range []string{"wrk: connection refused\n", "  0 requests in 5.00s, 0B read\nRequests/sec:      0.00\n"} {
		if _, _, err := WrkCounts([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
