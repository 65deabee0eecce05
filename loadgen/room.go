package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/roomwire"
)

// NotAdmittedInTime is the outcome of a buyer whose wait in the room outlasted RoomTimeout.
const NotAdmittedInTime outcome.Code = "ROOM_TIMEOUT"

// ticket is the part of a queue answer a buyer acts on.
type ticket struct {
	Ticket           string  `json:"ticket"`
	Status           string  `json:"status"`
	PollAfterSeconds float64 `json:"pollAfterSeconds"`
	AdmissionToken   string  `json:"admissionToken"`
	Error            string  `json:"error"`
}

// journey takes one buyer through the waiting room and then sends purchase with the admission
// token. An answer the room gives instead of a ticket (rate limited, no room, room down) is the
// buyer's outcome.
func (cfg BurstConfig) journey(ctx context.Context, client *http.Client, purchase *http.Request) Answer {
	start := time.Now()
	maxPoll, limit := cfg.MaxPoll, cfg.RoomTimeout
	if maxPoll == 0 {
		maxPoll = time.Second
	}
	if limit == 0 {
		limit = 2 * time.Minute
	}
	base := fmt.Sprintf("%s/api/v1/sales/%s/queue", cfg.BaseURL, cfg.SaleID)
	auth := purchase.Header.Get("Authorization")
	call := func(method, url, body string) (int, ticket, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			return 0, ticket{}, nil, err
		}
		req.Header.Set("Authorization", auth)
		resp, err := client.Do(req)
		if err != nil {
			return 0, ticket{}, nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var t ticket
		_ = json.Unmarshal(b, &t)
		return resp.StatusCode, t, b, nil
	}
	fail := func(status int, body []byte, err error) Answer {
		if err != nil {
			return Answer{Outcome: TransportError, Latency: time.Since(start)}
		}
		code, _ := Classify(status, body)
		return Answer{Outcome: code, Status: status, Latency: time.Since(start)}
	}
	join := ""
	status, _, body, err := call(http.MethodGet, base+"/challenge", "")
	if err != nil || status != http.StatusOK {
		return fail(status, body, err)
	}
	var ch struct {
		Challenge  string `json:"challenge"`
		Difficulty int    `json:"difficulty"`
	}
	_ = json.Unmarshal(body, &ch)
	if ch.Difficulty > 0 {
		nonce, err := roomwire.Solve(ctx, ch.Challenge, ch.Difficulty)
		if err != nil {
			return fail(0, nil, err)
		}
		join = fmt.Sprintf(`{"challenge":%q,"nonce":%q}`, ch.Challenge, nonce)
	}
	status, t, body, err := call(http.MethodPost, base, join)
	for err == nil && status == http.StatusOK && t.Status != string(roomwire.StatusAdmitted) {
		if time.Since(start) > limit {
			return Answer{Outcome: NotAdmittedInTime, Latency: time.Since(start)}
		}
		wait := min(time.Duration(t.PollAfterSeconds*float64(time.Second)), maxPoll)
		select {
		case <-ctx.Done():
			return Answer{Outcome: TransportError, Latency: time.Since(start)}
		case <-time.After(wait):
		}
		status, t, body, err = call(http.MethodGet, base+"/"+t.Ticket, "")
	}
	if err != nil || status != http.StatusOK {
		return fail(status, body, err)
	}
	purchase.Header.Set("X-Admission-Token", t.AdmissionToken)
	a := Do(client, purchase)
	a.Latency = time.Since(start)
	return a
}
