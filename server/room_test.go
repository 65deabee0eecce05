package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/loadgen"
)

func roomSettings() sale.Room {
	return sale.Room{Enabled: true, AdmissionRate: 200, MaxActive: 50, WaiterTTL: 30 * time.Second, ActiveTTL: time.Minute,
		FairStart: sale.FairStartFIFO, FailMode: sale.FailClosed}
}

// queueTicket joins the room as user and polls until admitted; it returns the admission token.
func (e *env) admitted(base, user string) string {
	e.t.Helper()
	// The first try joins the queue; the others poll the ticket it gave.
	method, path := http.MethodPost, "/api/v1/sales/"+e.sale.ID+"/queue"
	var token string
	eventually.OK(e.t, 10*time.Second, func() error {
		code, body := e.doAt(base, method, path, user, nil, nil)
		var t struct {
			Ticket, Status, AdmissionToken string
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &t) != nil {
			e.t.Fatalf("queue answered %d %s", code, body)
		}
		if t.Status != "admitted" {
			method, path = http.MethodGet, "/api/v1/sales/"+e.sale.ID+"/queue/"+t.Ticket
			return fmt.Errorf("%s never admitted: %s", user, body)
		}
		token = t.AdmissionToken
		return nil
	})
	return token
}

func (e *env) buyWith(base, user, key, token string) (int, string) {
	e.t.Helper()
	return e.doAt(base, http.MethodPost, e.purchasePath(), user, map[string]string{"Idempotency-Key": key, "X-Admission-Token": token}, nil)
}

// TestRoomGatesPurchases: with the room on, buying needs an admission token of this buyer for this
// sale; 60 buyers going through the room (with a proof of work) on two instances buy 20 units.
func TestRoomGatesPurchases(t *testing.T) {
	t.Parallel()
	rm := roomSettings()
	rm.PowDifficulty = 8
	e := newEnvWith(t, envOptions{Quantity: 20, Limit: 1, Room: rm})
	_, base2 := e.start(true)
	code, body := e.buy("walk-in", "k")
	if code != http.StatusTooManyRequests || !strings.Contains(body, "NOT_ADMITTED") {
		t.Fatalf("purchase without admission: %d %s, want 429 NOT_ADMITTED", code, body)
	}
	if code, body := e.do(http.MethodPost, "/api/v1/sales/"+e.sale.ID+"/queue", "lazy", nil, nil); code != http.StatusBadRequest || !strings.Contains(body, "proof of work") {
		t.Fatalf("join without the work: %d %s, want 400 naming the proof of work", code, body)
	}

	var wg sync.WaitGroup
	results := make([]map[outcome.Code]int, 2)
	for i, base := range []string{e.base, base2} {
		wg.Go(func() {
			res, err := burst(base, e.sale.ID, "roomer-"+string(rune('a'+i))+"-", 30, 16, &loadgen.Room{MaxPoll: 50 * time.Millisecond})
			if err != nil {
				t.Error(err)
			}
			results[i] = outcomes(res)
		})
	}
	wg.Wait()
	counts := map[outcome.Code]int{}
	for _, r := range results {
		for c, n := range r {
			counts[c] += n
		}
	}
	if counts[outcome.Reserved] != 20 || counts[outcome.SoldOut] != 40 {
		t.Fatalf("through the room: %v, want 20 RESERVED and 40 SOLD_OUT", counts)
	}
	e.counts(20)
	e.settled()
}

// TestAdmissionTokenIsBound: a token works for its buyer and sale only.
func TestAdmissionTokenIsBound(t *testing.T) {
	t.Parallel()
	rm := roomSettings()
	e := newEnvWith(t, envOptions{Quantity: 5, Limit: 1, Room: rm})
	other := newEnvWith(t, envOptions{Quantity: 5, Limit: 1, Room: rm})
	tok := e.admitted(e.base, "owner")
	for name, tc := range map[string]struct {
		env   *env
		user  string
		token string
	}{
		"another buyer": {e, "thief", tok},
		"another sale":  {other, "owner", tok},
		"forged":        {e, "owner", tok[:len(tok)-4] + "AAAA"},
	} {
		if code, body := tc.env.buyWith(tc.env.base, tc.user, "k-"+strings.ReplaceAll(name, " ", "-"), tc.token); code != http.StatusTooManyRequests || !strings.Contains(body, "NOT_ADMITTED") {
			t.Errorf("%s: %d %s, want 429 NOT_ADMITTED", name, code, body)
		}
	}
	if code, body := e.buyWith(e.base, "owner", "k", tok); code != http.StatusAccepted {
		t.Fatalf("the owner's purchase: %d %s", code, body)
	}
	e.settled()
}

// TestRoomFailModes points the room at a Redis that is not there: a fail-closed sale admits
// nobody, a fail-open sale sends buyers straight to the purchase path, which stays rate limited.
func TestRoomFailModes(t *testing.T) {
	t.Parallel()
	rm := roomSettings()
	closed := newEnvWith(t, envOptions{Quantity: 5, Limit: 1, Room: rm, RoomRedisURL: "redis://127.0.0.1:1/0"})
	if code, body := closed.do(http.MethodPost, "/api/v1/sales/"+closed.sale.ID+"/queue", "b1", nil, nil); code != http.StatusServiceUnavailable {
		t.Fatalf("join with the room down: %d %s, want 503", code, body)
	}
	if code, body := closed.buy("b1", "k"); code != http.StatusTooManyRequests || !strings.Contains(body, "NOT_ADMITTED") {
		t.Fatalf("fail closed: %d %s, want 429 NOT_ADMITTED", code, body)
	}
	rm.FailMode = sale.FailOpen
	open := newEnvWith(t, envOptions{Quantity: 5, Limit: 2, Room: rm, RoomRedisURL: "redis://127.0.0.1:1/0",
		RateLimits: sale.RateLimits{PerUser: 1, PerUserBurst: 1}})
	open.eventually(open.base, "b1", "k1", http.StatusAccepted)
	if code, body := open.buy("b1", "k2"); code != http.StatusTooManyRequests || !strings.Contains(body, "RATE_LIMITED") {
		t.Fatalf("fail open is still rate limited: %d %s, want 429 RATE_LIMITED", code, body)
	}
	if _, body := open.do(http.MethodGet, "/metrics", "", nil, nil); !strings.Contains(body, "fsctl_room_fail_open_total 1") || !strings.Contains(body, "fsctl_room_up 0") {
		t.Fatal("the fail-open purchase was not counted")
	}
	open.settled()
}

// TestRateLimits: per buyer and per address, on purchases, with Retry-After.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 10, Limit: 5, RateLimits: sale.RateLimits{PerUser: 2, PerUserBurst: 2, PerAddress: 4, PerAddressBurst: 4}})
	for i, want := range []int{http.StatusAccepted, http.StatusAccepted, http.StatusTooManyRequests} {
		code, body := e.buy("eager", "k"+string(rune('0'+i)))
		if code != want {
			t.Fatalf("purchase %d of one buyer: %d %s, want %d", i+1, code, body, want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, e.base+e.purchasePath(), nil)
	req.Header.Set("Authorization", "Bearer "+e.token("eager"))
	req.Header.Set("Idempotency-Key", "k9")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("limited purchase: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The address limit (4/s) catches a farm of accounts on one address.
	limited := 0
	for _, u := range []string{"f1", "f2", "f3", "f4", "f5"} {
		if code, _ := e.buy(u, "k"); code == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("five accounts on one address within a second were never limited")
	}
}

// TestRoomOperatorControls pauses admission and changes the rate through /admin/v1.
func TestRoomOperatorControls(t *testing.T) {
	t.Parallel()
	rm := roomSettings()
	e := newEnvWith(t, envOptions{Quantity: 5, Limit: 1, Room: rm, AdminToken: opToken})
	path := "/admin/v1/sales/" + e.sale.ID + "/room"
	if code, body := e.admin(e.base, http.MethodPut, path, `{"paused":true,"admissionRate":7}`); code != http.StatusOK || !strings.Contains(body, `"admissionRate":7`) || !strings.Contains(body, `"paused":true`) {
		t.Fatalf("pause admission: %d %s", code, body)
	}
	code, body := e.do(http.MethodPost, "/api/v1/sales/"+e.sale.ID+"/queue", "patient", nil, nil)
	var tk struct{ Ticket, Status string }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &tk) != nil {
		t.Fatalf("join: %d %s", code, body)
	}
	time.Sleep(200 * time.Millisecond) // ten admission rounds of the test instance
	if _, body := e.do(http.MethodGet, "/api/v1/sales/"+e.sale.ID+"/queue/"+tk.Ticket, "patient", nil, nil); !strings.Contains(body, `"waiting"`) {
		t.Fatalf("admitted while admission is paused: %s", body)
	}
	if _, body := e.admin(e.base, http.MethodGet, path, ""); !strings.Contains(body, `"queueDepth":1`) {
		t.Fatalf("room stats: %s", body)
	}
	if code, _ := e.admin(e.base, http.MethodPut, path, `{"paused":false}`); code != http.StatusOK {
		t.Fatal("resume admission")
	}
	e.admitted(e.base, "patient")
	if code, _ := e.admin(e.base, http.MethodPut, path, `{"admissionRate":-1}`); code != http.StatusBadRequest {
		t.Fatal("a negative admission rate was accepted")
	}
	if _, body := e.do(http.MethodGet, "/metrics", "", nil, nil); !strings.Contains(body, `fsctl_room_admission_rate{sale="`+e.sale.ID+`"} 7`) {
		t.Fatal("metrics do not show the new admission rate")
	}
}

// TestCheckoutFreesItsSlot: with room for one active buyer, each final answer (reserved, sold out by
// the script, sold out by the local flag) must free the slot at once, or the next buyer would wait
// for the lease to run out.
func TestCheckoutFreesItsSlot(t *testing.T) {
	t.Parallel()
	rm := roomSettings()
	rm.MaxActive = 1
	e := newEnvWith(t, envOptions{Quantity: 1, Limit: 1, Room: rm})
	want := []int{http.StatusAccepted, http.StatusGone, http.StatusGone, http.StatusGone}
	for i, code := range want {
		user := "one-at-a-time-" + string(rune('a'+i))
		tok := e.admitted(e.base, user) // fails after 10 s if the previous slot was never freed
		if got, body := e.buyWith(e.base, user, "k", tok); got != code {
			t.Fatalf("buyer %d: %d %s, want %d", i, got, body, code)
		}
	}
	if _, body := e.do(http.MethodGet, "/metrics", "", nil, nil); !strings.Contains(body, "fsctl_sold_out_flag_answers_total 2") {
		t.Fatal("the last two buyers were not answered by the sold-out flag")
	}
}
