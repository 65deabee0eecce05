package loadgen

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/contract/roomwire"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// Room is the waiting-room journey: after the release each click fetches the challenge, solves
// the proof of work, joins the queue (the profile's http.room), polls until admitted and then
// buys with the admission token. Record has no field for the admission instant (Started is the attempt's first call,
// which the report reads as the buyer's wake-up), so Room keeps the admissions itself.
type Room struct {
	// MaxPoll caps the server's pollAfterSeconds, so a buyer never sleeps longer between polls.
	MaxPoll time.Duration
	// Wait gives up on a buyer still queued this long after its intended time (outcome TIMEOUT).
	Wait time.Duration
	// Reveal, when set, buys through the buyer's revealed purchase path once admitted (a sale
	// with both a waiting room and reveal on).
	Reveal *Reveal

	mu    sync.Mutex
	waits []Admission
}

// Admission is one click's way through the room.
type Admission struct {
	Buyer, Click int
	// Admitted is false when the room answered something other than a ticket or the wait ran out.
	Admitted bool
	// Waited is from the intended time to the admission (or to giving up).
	Waited time.Duration
	// Polls counts the ticket polls after joining.
	Polls int
}

// ticket is the part of a queue answer a buyer acts on.
type ticket struct {
	Ticket           string  `json:"ticket"`
	Status           string  `json:"status"`
	PollAfterSeconds float64 `json:"pollAfterSeconds"`
	AdmissionToken   string  `json:"admissionToken"`
}

// Prepare builds the queue URLs and the purchase request; the admission token is added once the
// click is admitted.
func (j *Room) Prepare(p Plan, b Buyer, key, token string) (Attempt, error) {
	buy, err := purchaseRequest(p, b, key, token)
	if err != nil {
		return nil, err
	}
	queue := profile.Route(p.BaseURL, p.target().HTTP.Room, profile.Vars{"sale": b.Target.SaleID})
	bearer := "Bearer " + token
	cls, err := p.classifier()
	if err != nil {
		return nil, err
	}
	var ask *http.Request
	if j.Reveal != nil {
		if ask, err = j.Reveal.askRequest(p, b, token); err != nil {
			return nil, err
		}
	}
	now := p.now
	maxPoll, wait := cmp.Or(j.MaxPoll, time.Second), cmp.Or(j.Wait, 2*time.Minute)
	var admission string // kept across retries of the click: one admission buys once
	var path string      // the revealed purchase path, likewise
	return func(ctx context.Context, c *http.Client, rec *Record) {
		start := now()
		if admission == "" {
			a := Admission{Buyer: b.Index, Click: rec.Click}
			admission, a.Polls = j.queue(ctx, c, queue, bearer, cls, now, maxPoll, rec.Intended.Add(wait), rec)
			a.Admitted = admission != ""
			a.Waited = now().Sub(rec.Intended)
			j.record(a)
			if admission == "" {
				rec.Started = start
				return
			}
			// Set once, before the first purchase goes out: the tries share the header (fresh),
			// and the transport may still be writing a try that timed out when the next one goes.
			buy.Header.Set("X-Admission-Token", admission)
		}
		if j.Reveal != nil {
			j.Reveal.buy(ctx, c, p.BaseURL, ask, buy, &path, cls, now, rec)
		} else {
			rec.Method, rec.URL = buy.Method, buy.URL.String()
			send(ctx, c, buy, cls, now, rec)
		}
		rec.Started = start
	}, nil
}

// queue takes one click through the room and returns its admission token, or "" with rec
// filled with the room's answer (RATE_LIMITED, NOT_FOUND, a transport error, TIMEOUT...).
func (j *Room) queue(ctx context.Context, c *http.Client, base, bearer string, cls *Classifier, now func() time.Time,
	maxPoll time.Duration, giveUp time.Time, rec *Record) (string, int) {
	fail := func(method, url string, status int, body []byte, err error) (string, int) {
		rec.Method, rec.URL, rec.Status, rec.Done = method, url, status, now()
		if err != nil {
			rec.Outcome, rec.Error = TransportError, err.Error()
		} else {
			rec.Outcome, rec.OrderID = cls.Classify(status, body)
		}
		return "", 0
	}
	status, body, err := roomCall(ctx, c, http.MethodGet, base+"/challenge", bearer, "")
	if err != nil || status != http.StatusOK {
		return fail(http.MethodGet, base+"/challenge", status, body, err)
	}
	var ch struct {
		Challenge  string `json:"challenge"`
		Difficulty int    `json:"difficulty"`
	}
	if err := json.Unmarshal(body, &ch); err != nil {
		return fail(http.MethodGet, base+"/challenge", status, body, fmt.Errorf("challenge: %w", err))
	}
	join := ""
	if ch.Difficulty > 0 {
		nonce, err := roomwire.Solve(ctx, ch.Challenge, ch.Difficulty)
		if err != nil {
			return fail(http.MethodGet, base+"/challenge", status, body, err)
		}
		join = fmt.Sprintf(`{"challenge":%q,"nonce":%q}`, ch.Challenge, nonce)
	}
	method, url := http.MethodPost, base
	status, body, err = roomCall(ctx, c, method, url, bearer, join)
	for polls := 0; ; polls++ {
		var t ticket
		if err == nil && status == http.StatusOK {
			err = json.Unmarshal(body, &t)
		}
		if err != nil || status != http.StatusOK {
			return fail(method, url, status, body, err)
		}
		if t.Status == string(roomwire.StatusAdmitted) {
			return t.AdmissionToken, polls
		}
		if now().After(giveUp) {
			rec.Method, rec.URL, rec.Done = method, url, now()
			rec.Outcome, rec.Error = Timeout, fmt.Sprintf("not admitted after %d polls", polls)
			return "", polls
		}
		pause := min(time.Duration(t.PollAfterSeconds*float64(time.Second)), maxPoll)
		select {
		case <-ctx.Done():
			return fail(method, url, 0, nil, ctx.Err())
		case <-time.After(pause):
		}
		method, url = http.MethodGet, base+"/"+t.Ticket
		status, body, err = roomCall(ctx, c, method, url, bearer, "")
	}
}

func (j *Room) record(a Admission) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.waits = append(j.waits, a)
}

// Admissions returns every click's way through the room, by buyer and click.
func (j *Room) Admissions() []Admission {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := slices.Clone(j.waits)
	slices.SortFunc(out, func(a, b Admission) int { return cmp.Or(cmp.Compare(a.Buyer, b.Buyer), cmp.Compare(a.Click, b.Click)) })
	return out
}

// roomCall sends one queue call with the buyer's token.
func roomCall(ctx context.Context, c *http.Client, method, url, bearer, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", bearer)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, b, err
}
