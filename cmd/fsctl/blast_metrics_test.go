package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestBlastMetricsFlagErrorsAreUsageErrors: a bad --metrics-* value is a usage error (exit 2)
// that names the flag (or the variable), before anything is sent, and never repeats a header,
// which may hold a token.
func TestBlastMetricsFlagErrorsAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--metrics-remote-write", "prometheus:9090/api/v1/write"}, "", "--metrics-remote-write"},
		{[]string{"--metrics-remote-write", "ftp://prometheus/api/v1/write"}, "", "--metrics-remote-write"},
		{[]string{"--metrics-remote-write", "http://prometheus:9090/api/v1/write", "--metrics-interval", "0s"}, "", "--metrics-interval"},
		{[]string{"--metrics-remote-write", "http://prometheus:9090/api/v1/write", "--metrics-interval", "-1s"}, "", "--metrics-interval"},
		{[]string{"--metrics-remote-write", "http://prometheus:9090/api/v1/write", "--metrics-header", "Bearer s3cr3t"}, "", "--metrics-header"},
		{[]string{"--metrics-remote-write", "http://prometheus:9090/api/v1/write", "--metrics-header", "Authorization:"}, "", "--metrics-header"},
		{[]string{"--metrics-remote-write", "http://prometheus:9090/api/v1/write"}, "Bearer s3cr3t", envMetricsHeader},
	} {
		t.Setenv(envMetricsHeader, tc.env)
		args := append([]string{"blast", "--item", "s:i", "--target", "http://127.0.0.1:1"}, tc.args...)
		_, code, err := runCLI(t, args...)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%v (env %q): exit %d, %v; want %d naming %s, without the header", tc.args, tc.env, code, err, exitUsage, tc.want)
		}
	}
	// The flag replaces the variable's headers, so a bad variable is no error beside a good flag.
	var f metricsFlags
	f.url = "http://prometheus:9090/api/v1/write"
	f.interval = 1
	f.header.fromEnv("Bearer s3cr3t")
	_ = f.header.Set("Authorization: Bearer t0ken")
	if rw, err := f.remoteWrite(); err != nil || rw.Header.Get("Authorization") != "Bearer t0ken" || len(rw.Header) != 1 {
		t.Errorf("a flag after a bad variable: %+v, %v", rw, err)
	}
}

// TestBlastHelpNeverPrintsTheMetricsSecrets: the receiver's password and the header values from
// the environment stay out of --help, which still says which headers are set.
func TestBlastHelpNeverPrintsTheMetricsSecrets(t *testing.T) {
	t.Setenv(envMetricsRemoteWrite, "https://123456:glc-s3cr3t@prometheus.example/api/prom/push")
	t.Setenv(envMetricsHeader, "Authorization: Bearer tok-s3cr3t\nX-Scope-OrgID: team-s3cr3t")
	out, _, err := runCLI(t, "blast", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "s3cr3t") || !strings.Contains(out, "123456:xxxxx@prometheus.example") || !strings.Contains(out, "Authorization: xxxxx") {
		t.Errorf("--help shows a secret, or hides what is set:\n%s", out)
	}
}

// TestBlastPushesMetrics runs the command with the export on against a fake checkout: the
// receiver gets the pushes with the header, and the JSON report says how many went.
func TestBlastPushesMetrics(t *testing.T) {
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		w.WriteHeader(http.StatusGone)
		fmt.Fprint(w, `{"error":"SOLD_OUT"}`)
	}))
	defer shop.Close()
	var pushes atomic.Int64
	var mu sync.Mutex
	var auth, encoding string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pushes.Add(1)
		mu.Lock()
		auth, encoding = r.Header.Get("Authorization"), r.Header.Get("Content-Encoding")
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	out, code, err := runCLI(t, "blast", "--target", shop.URL, "--item", "s:i", "--buyers", "20", "--conns", "4", "--in", "100ms",
		"--stock", "0", "--limit", "1", "--jwt-secret", "0123456789abcdef0123", "--output", "json",
		"--metrics-remote-write", receiver.URL+"/api/v1/write", "--metrics-interval", "20ms", "--metrics-header", "Authorization: Bearer t0ken")
	if code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	var rep struct {
		Metrics struct {
			URL            string
			Pushes, Failed int
		} `json:"metricsRemoteWrite"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if m := rep.Metrics; m.Pushes < 2 || m.Failed != 0 || int64(m.Pushes) > pushes.Load() || auth != "Bearer t0ken" || encoding != "snappy" {
		t.Errorf("report %+v; receiver got %d pushes, Authorization %q, Content-Encoding %q", rep.Metrics, pushes.Load(), auth, encoding)
	}
}
