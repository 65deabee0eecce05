package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/payment"
)

// call sends one request to h and returns the status and the decoded JSON answer.
func call(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	var answer map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		t.Fatalf("%s %s answered %d with non-JSON %q", method, path, rec.Code, rec.Body)
	}
	return rec.Code, answer
}

func chargeBody(key, token string) string {
	return fmt.Sprintf(`{"idempotencyKey":%q,"amountCents":4999,"currency":"EUR","token":%q}`, key, token)
}

func TestChargeValidation(t *testing.T) {
	long := strings.Repeat("k", 129)
	tests := []struct {
		name string
		body string
		want int
	}{
		{"valid", chargeBody("order-1", "tok_ok"), 200},
		{"lower-case currency", `{"idempotencyKey":"order-2","amountCents":0,"currency":"eur","token":"tok_ok"}`, 200},
		{"longest key", chargeBody(long[:128], "tok_ok"), 200},
		{"not JSON", `charge me`, 400},
		{"empty body", ``, 400},
		{"missing key", `{"amountCents":1,"currency":"EUR","token":"tok_ok"}`, 400},
		{"misspelt amount", `{"idempotencyKey":"k","amount":1,"currency":"EUR","token":"tok_ok"}`, 400},
		{"missing amount", `{"idempotencyKey":"k","currency":"EUR","token":"tok_ok"}`, 400},
		{"null token", `{"idempotencyKey":"k","amountCents":1,"currency":"EUR","token":null}`, 400},
		{"negative amount", `{"idempotencyKey":"k","amountCents":-1,"currency":"EUR","token":"tok_ok"}`, 400},
		{"fractional amount", `{"idempotencyKey":"k","amountCents":1.5,"currency":"EUR","token":"tok_ok"}`, 400},
		{"amount as text", `{"idempotencyKey":"k","amountCents":"1","currency":"EUR","token":"tok_ok"}`, 400},
		{"empty key", chargeBody("", "tok_ok"), 400},
		{"key too long", chargeBody(long, "tok_ok"), 400},
		{"key with a space", chargeBody("order 1", "tok_ok"), 400},
		{"key with a newline", chargeBody("order\n1", "tok_ok"), 400},
		{"empty token", chargeBody("k", ""), 400},
		{"token too long", chargeBody("k", strings.Repeat("t", 257)), 400},
		{"token with a control character", chargeBody("k", "tok\x00ok"), 400},
		{"bad currency", `{"idempotencyKey":"k","amountCents":1,"currency":"E1R","token":"tok_ok"}`, 400},
		{"trailing data", chargeBody("k", "tok_ok") + `{}`, 400},
		{"array", `[]`, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Config{}, nil)
			code, answer := call(t, p.Handler(), "POST", "/v1/charges", tc.body)
			if code != tc.want {
				t.Fatalf("answered %d %v, want %d", code, answer, tc.want)
			}
			s := p.Stats()
			if code == 400 && (answer["error"] != "INVALID_REQUEST" || s.Rejected != 1 || s.Succeeded != 0) {
				t.Fatalf("refusal %v, stats %+v", answer, s)
			}
		})
	}
}

// testClock is a hand-wound clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(since time.Time, d time.Duration) {
	c.mu.Lock()
	c.t = since.Add(d)
	c.mu.Unlock()
}

func TestOutageWindows(t *testing.T) {
	start := time.Date(2025, 11, 28, 9, 0, 0, 0, time.UTC)
	clk := &testClock{t: start}
	p := New(Config{Outages: []Window{{From: 30 * time.Second, To: 40 * time.Second}, {From: time.Minute, To: 2 * time.Minute}}}, clk.Now)
	h := p.Handler()
	tests := []struct {
		at   time.Duration
		want int
	}{
		{0, 200},
		{30*time.Second - time.Nanosecond, 200},
		{30 * time.Second, 503},
		{40*time.Second - time.Nanosecond, 503},
		{40 * time.Second, 200},
		{90 * time.Second, 503},
		{2 * time.Minute, 200},
	}
	for i, tc := range tests {
		t.Run(tc.at.String(), func(t *testing.T) {
			clk.Set(start, tc.at)
			key := fmt.Sprintf("order-%d", i)
			if code, answer := call(t, h, "POST", "/v1/charges", chargeBody(key, "tok_ok")); code != tc.want {
				t.Fatalf("charge answered %d %v, want %d", code, answer, tc.want)
			}
			if code, _ := call(t, h, "GET", "/v1/charges/"+key, ""); tc.want == 503 && code != 503 {
				t.Fatalf("lookup in an outage answered %d", code)
			}
			clk.Set(start, 0)
			code, _ := call(t, h, "GET", "/v1/charges/"+key, "")
			if recorded := code == 200; recorded != (tc.want == 200) {
				t.Fatalf("recorded %v after a %d", recorded, tc.want)
			}
		})
	}
}

func TestBehaviorAtRuntime(t *testing.T) {
	p := New(Config{Latency: 0, Seed: 7}, nil)
	h := p.Handler()
	put := func(body string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("PUT", "/v1/behavior", strings.NewReader(body)))
		return rec.Code
	}
	if code := put(`{"errorRate":1,"jitter":"0s"}`); code != 200 {
		t.Fatalf("put answered %d", code)
	}
	if code, _ := call(t, h, "POST", "/v1/charges", chargeBody("a", "tok_visa")); code != 503 {
		t.Fatalf("charge with errorRate 1 answered %d", code)
	}
	for _, bad := range []string{`{"declineRate":2}`, `{"errorRate":-0.1}`, `{"latency":"soon"}`, `{"latency":"-1s"}`,
		`{"outages":[{"from":"20s","to":"10s"}]}`, `{"speed":1}`, `nope`} {
		if code := put(bad); code != 400 {
			t.Errorf("put %s answered %d, want 400", bad, code)
		}
	}
	if code := put(`{"declineRate":1,"outages":[{"from":"1h","to":"2h"}]}`); code != 200 {
		t.Fatalf("put answered %d", code)
	}
	got := p.Config()
	want := Config{DeclineRate: 1, ErrorRate: 1, Outages: []Window{{time.Hour, 2 * time.Hour}}, Seed: 7}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("config %+v, want %+v (fields left out keep their values)", got, want)
	}
	code, doc := call(t, h, "GET", "/v1/behavior", "")
	if code != 200 || doc["declineRate"] != 1.0 || doc["uptime"] == nil {
		t.Fatalf("get behavior: %d %v", code, doc)
	}
	if code, stats := call(t, h, "GET", "/v1/stats", ""); code != 200 || stats["errors"] != 1.0 || stats["charges"] != 1.0 {
		t.Fatalf("stats: %d %v", code, stats)
	}
}

func TestSameSeedSameDecisions(t *testing.T) {
	run := func() string {
		p := New(Config{DeclineRate: 0.5, ErrorRate: 0.2, Jitter: time.Microsecond, Seed: 42}, nil)
		var out strings.Builder
		for i := range 60 {
			code, answer := call(t, p.Handler(), "POST", "/v1/charges", chargeBody(fmt.Sprint("order-", i), "tok_visa"))
			fmt.Fprintf(&out, "%d:%v ", code, answer["status"])
		}
		return out.String()
	}
	first, second := run(), run()
	if first != second {
		t.Fatalf("same seed, different decisions:\n%s\n%s", first, second)
	}
	for _, want := range []string{"200:succeeded", "200:declined", "503:"} {
		if !strings.Contains(first, want) {
			t.Errorf("60 charges at 50%% declines and 20%% errors never gave %q: %s", want, first)
		}
	}
}

// TestConcurrentChargesAndVoids races charges and voids of one key: whatever the order, the key is
// charged at most once and every answer agrees with the final record.
func TestConcurrentChargesAndVoids(t *testing.T) {
	p := New(Config{Jitter: time.Millisecond}, nil)
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	var wg sync.WaitGroup
	answers := make(chan string, 64)
	for i := range 64 {
		wg.Go(func() {
			path, body := "/v1/charges", chargeBody("contested", "tok_ok")
			if i%8 == 0 {
				path, body = "/v1/charges/contested/void", ""
			}
			resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var r record
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				t.Error(err)
			}
			answers <- fmt.Sprintf("%d %s %s", resp.StatusCode, r.ID, r.Status)
		})
	}
	wg.Wait()
	close(answers)
	code, final := call(t, p.Handler(), "GET", "/v1/charges/contested", "")
	if code != 200 {
		t.Fatalf("lookup answered %d", code)
	}
	for a := range answers {
		if !strings.Contains(a, fmt.Sprint(final["id"])) || !strings.HasSuffix(a, fmt.Sprint(final["status"])) {
			t.Errorf("answer %q disagrees with the record %v", a, final)
		}
	}
	if s := p.Stats(); s.Succeeded+s.Voided != 1 || s.Declined != 0 {
		t.Fatalf("stats %+v: the key was settled more than once", s)
	}
}

func TestServeShutsDownWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := New(Config{}, nil)
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	resp, err := http.Post("http://"+ln.Addr().String()+"/v1/charges", "application/json", bytes.NewBufferString(chargeBody("k", "tok_ok")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("charge answered %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func TestNewRefusesAnInvalidConfig(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted a decline rate of 2")
		}
	}()
	New(Config{DeclineRate: 2}, nil)
}

func TestVoidedKeyAnswersConflict(t *testing.T) {
	h := New(Config{}, nil).Handler()
	if code, v := call(t, h, "POST", "/v1/charges/k/void", ""); code != 200 || v["status"] != string(payment.Voided) {
		t.Fatalf("void: %d %v", code, v)
	}
	if code, v := call(t, h, "POST", "/v1/charges", chargeBody("k", "tok_ok")); code != 409 || v["status"] != string(payment.Voided) {
		t.Fatalf("charge of a voided key: %d %v, want 409 voided", code, v)
	}
	if code, _ := call(t, h, "POST", "/v1/charges/%20/void", ""); code != 400 {
		t.Fatalf("void of a blank key answered %d, want 400", code)
	}
}
