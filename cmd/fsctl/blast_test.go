package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
)

// runCLI runs fsctl with args and returns stdout and the exit status main would give.
func runCLI(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	out, _, code, err := runCLIBoth(t, args...)
	return out, code, err
}

func TestBlastFlagErrorsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--buyers", "x"},
		{"--item", "console"},
		{"--sale", "s"},
		{"--sale", "s", "--item", "i", "--buyers", "0"},
		{"--sale", "s", "--item", "i", "--shard", "2/2"},
		{"--sale", "s", "--item", "i", "--at", "tomorrow"},
		{"--sale", "s", "--item", "i", "--at", "2020-01-01T00:00:00Z"},
		{"--sale", "s", "--item", "i", "--shard", "0/2"},
		{"--sale", "s", "--item", "i", "--output", "xml"},
		{"--sale", "s", "--item", "i", "--stock", "5"},
		{"--sale", "s", "--item", "i", "--target", "localhost:8080"},
		{"--sale", "s", "--item", "i", "--engine", "turbo"},
		{"--sale", "s", "--item", "i", "--engine", "raw", "--retries", "1"},
		{"--sale", "s", "--item", "i", "--engine", "raw", "--target", "https://127.0.0.1:1"},
		{"--sale", "s", "--item", "i", "--timeout", "-1s"},
	} {
		_, code, err := runCLI(t, append([]string{"blast"}, args...)...)
		if code != 2 || err == nil || err.Error() == "" {
			t.Errorf("blast %v: exit %d, %v; want 2 with a message", args, code, err)
		}
	}
}

// TestBlastFailsAnOversellingTarget runs the command against a checkout that says yes to every
// buyer: with 10 units known from --stock, the run is a broken invariant (exit 2).
func TestBlastFailsAnOversellingTarget(t *testing.T) {
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"orderId":"order-%d"}`, n.Add(1))
	}))
	defer hs.Close()
	results := filepath.Join(t.TempDir(), "results.bin")
	out, code, err := runCLI(t, "blast", "--target", hs.URL, "--item", "s:i", "--buyers", "50", "--conns", "8", "--engine", "http",
		"--in", "100ms", "--stock", "10", "--limit", "1", "--jwt-secret", "0123456789abcdef0123", "--results", results, "--timeout", "3s")
	if code != exitInvariant || !strings.Contains(out, "invariant BROKEN  no oversell") || !strings.Contains(out, "50 reservations for 10 units") ||
		!strings.Contains(out, "engine: http; request timeout 3s\n") {
		t.Fatalf("exit %d (%v), want 4 with the oversell and the explicit engine and timeout named:\n%s", code, err, out)
	}
	// The raw engine, which auto picks for this direct purchase, goes through the same report and invariants.
	out, code, err = runCLI(t, "blast", "--target", hs.URL, "--item", "s:i", "--buyers", "50", "--conns", "8",
		"--in", "100ms", "--stock", "10", "--limit", "1", "--jwt-secret", "0123456789abcdef0123")
	if code != exitInvariant || !strings.Contains(out, "50 reservations for 10 units") ||
		!strings.Contains(out, "engine: raw (auto); request timeout 10.025s (auto: 10s + 1s per 2000 clicks)") {
		t.Fatalf("raw engine: exit %d (%v), want 2 with the oversell and auto's choices named:\n%s", code, err, out)
	}
	// Retries are beyond raw: auto falls back to http and the report says why.
	out, _, _ = runCLI(t, "blast", "--target", hs.URL, "--item", "s:i", "--buyers", "10", "--conns", "2", "--retries", "1",
		"--in", "50ms", "--stock", "100", "--limit", "1", "--jwt-secret", "0123456789abcdef0123", "--output", "json")
	if !strings.Contains(out, `"engine": "http"`) || !strings.Contains(out, `"engineFallback": "retries and replays need --engine http"`) {
		t.Errorf("auto with --retries, want http and the reason in the JSON:\n%s", out)
	}
	f, err := os.Open(results)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := vegeta.NewDecoder(f)
	var r vegeta.Result
	if err := dec.Decode(&r); err != nil || r.Attack != "RESERVED" || r.Code != 202 {
		t.Errorf("first result %+v, %v", r, err)
	}

	// The same run within the thresholds passes; --expect-sold that does not hold exits 1.
	out, code, _ = runCLI(t, "blast", "--target", hs.URL, "--item", "s:i", "--buyers", "20", "--conns", "4",
		"--in", "50ms", "--stock", "100", "--limit", "1", "--expect-sold", "7", "--output", "json")
	if code != exitCheck || !strings.Contains(out, `"thresholdFailures"`) {
		t.Errorf("exit %d, want 1 for a missed --expect-sold:\n%s", code, out)
	}
}

func TestBlastRefusesAnUnreachableTarget(t *testing.T) {
	// Nothing listens on port 1 (a closed test server's port may be another test's by now).
	_, code, err := runCLI(t, "blast", "--target", "http://127.0.0.1:1", "--item", "s:i")
	if code != 1 || err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("exit %d, %v", code, err)
	}
}

// TestBlastShardsMerge fires one burst as two shard processes with a shared --at, writes their
// records and an HTML report, and merges the records into one verdict.
func TestBlastShardsMerge(t *testing.T) {
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		if k := n.Add(1); k <= 10 {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"orderId":"order-%d"}`, k)
			return
		}
		w.WriteHeader(http.StatusGone)
		fmt.Fprint(w, `{"error":"SOLD_OUT"}`)
	}))
	defer hs.Close()
	dir := t.TempDir()
	at := time.Now().Add(700 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Go(func() {
			_, codes[i], _ = runCLI(t, "blast", "--target", hs.URL, "--item", "s:i", "--buyers", "40", "--conns", "4",
				"--at", at, "--shard", fmt.Sprintf("%d/2", i), "--stock", "10", "--limit", "1", "--max-skew", "0",
				"--records", filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i)), "--html", filepath.Join(dir, fmt.Sprintf("s%d.html", i)))
		})
	}
	wg.Wait()
	if codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("shard exits %v, want 0 0", codes)
	}
	if page, err := os.ReadFile(filepath.Join(dir, "s0.html")); err != nil || !strings.Contains(string(page), "<svg") {
		t.Fatalf("shard 0's HTML report: %v", err)
	}
	out, code, err := runCLI(t, "blast", "merge", filepath.Join(dir, "s0.jsonl"), filepath.Join(dir, "s1.jsonl"))
	if code != 0 || !strings.Contains(out, "buyers 40, requests 40, sold 10") {
		t.Fatalf("merge: exit %d (%v)\n%s", code, err, out)
	}
}

// TestBlastMalformedProfile: a profile that does not validate is a usage error naming its field
// and line, before anything is sent.
func TestBlastMalformedProfile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.yaml")
	b, err := os.ReadFile(filepath.Join("..", "..", "profiles", "spring-article.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), "type: rs256", "type: rs512", 1)
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _, _ := strings.Cut(bad, "type: rs512")
	line := strings.Count(before, "\n") + 1
	_, code, err := runCLI(t, "blast", "--profile", file, "--target", "http://127.0.0.1:1", "--sale", "s", "--item", "1")
	if code != 2 || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line %d: token.type", line)) {
		t.Errorf("exit %d, %v; want 2 naming token.type on line %d", code, err, line)
	}
}

// TestBlastThroughTheArticleProfile fires 300 buyers at two items of 50 of the Spring-article
// shop through its shipped profile: exactly 100 reserved, the response invariants and the
// profile's state checks hold, and the report names the profile. fsctl serve's own journeys are
// refused for it.
func TestBlastThroughTheArticleProfile(t *testing.T) {
	s := articletest.Start(t, 50, 50)
	args := []string{"blast", "--profile", s.ProfilePath, "--target", s.Base, "--sale", s.Sale, "--item", s.Items[0], "--item", s.Items[1],
		"--buyers", "300", "--conns", "32", "--in", "300ms", "--check-state", "--redis-url", s.RedisURL, "--postgres-url", s.PostgresURL,
		"--settle", "30s", "-o", "json"}
	out, code, err := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d (%v):\n%s", code, err, out)
	}
	var sum struct {
		Profile  string `json:"profile"`
		Sold     int    `json:"sold"`
		Outcomes []struct {
			Outcome string `json:"outcome"`
			Count   int    `json:"count"`
		} `json:"outcomes"`
		Verdicts []struct {
			Check  string `json:"check"`
			Status string `json:"status"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !strings.HasPrefix(sum.Profile, "spring-article (") || sum.Sold != 100 {
		t.Errorf("profile %q, sold %d; want spring-article and 100", sum.Profile, sum.Sold)
	}
	for _, o := range sum.Outcomes {
		if o.Outcome != "RESERVED" && o.Outcome != "SOLD_OUT" && o.Outcome != "ALREADY_PURCHASED" {
			t.Errorf("%d answers %s", o.Count, o.Outcome)
		}
	}
	names := ""
	for _, v := range sum.Verdicts {
		names += v.Check + "; "
		if v.Status != "pass" {
			t.Errorf("verdict %s failed", v.Check)
		}
	}
	if !strings.Contains(names, "Redis agrees with PostgreSQL") || !strings.Contains(names, "every RESERVED order reached PostgreSQL") {
		t.Errorf("verdicts %s: want the profile's state checks", names)
	}
	_, code, err = runCLI(t, append(args[:len(args)-2], "--room")...)
	if code != 2 || err == nil || !strings.Contains(err.Error(), "http.room") {
		t.Errorf("--room with the article profile: exit %d, %v; want a usage error", code, err)
	}
}

// TestBlastLimitsFromAnUnreachableDatabase: without --stock/--limit and without a sale page, the
// limits come from the profile's SQL; a database that is not there is an error naming the query
// and pointing at the flags.
func TestBlastLimitsFromAnUnreachableDatabase(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()
	_, code, err := runCLI(t, "blast", "--profile", filepath.Join("..", "..", "profiles", "spring-article.yaml"), "--target", hs.URL,
		"--sale", "article", "--item", "1", "--postgres-url", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if code != 1 || err == nil || !strings.Contains(err.Error(), "sql.item") || !strings.Contains(err.Error(), "--stock and --limit") {
		t.Errorf("exit %d, %v; want an error naming sql.item and --stock/--limit", code, err)
	}
}
