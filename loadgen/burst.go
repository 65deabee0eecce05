// Package loadgen fires bursts of virtual buyers at a checkout and classifies every answer. This
// is the small scripted burst behind `fsctl demo` and the contention tests; `fsctl blast` grows
// from it.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fsctl/fsctl/auth"
	"github.com/fsctl/fsctl/outcome"
)

// Outcomes a client sees that the server never names itself.
const (
	TransportError outcome.Code = "TRANSPORT_ERROR"
	Timeout        outcome.Code = "TIMEOUT"
	ServerError    outcome.Code = "SERVER_ERROR"
)

// BurstConfig describes one burst: Buyers distinct users, each sending one purchase at the same
// instant for the same item.
type BurstConfig struct {
	BaseURL        string
	SaleID, ItemID string
	Buyers         int
	// UserPrefix names the buyers: <prefix><n>.
	UserPrefix string
	Secret     []byte
	// Conns caps the connections to the server; buyers beyond it queue for a connection.
	Conns   int
	Timeout time.Duration
	// Room sends every buyer through the sale's waiting room first: solve the proof of work when
	// asked, join, poll until admitted, then buy with the admission token.
	Room bool
	// MaxPoll caps the wait between polls the server suggests (default 1 s).
	MaxPoll time.Duration
	// RoomTimeout bounds one buyer's wait in the room (default 2 minutes).
	RoomTimeout time.Duration
}

// Answer is what one buyer got.
type Answer struct {
	User    string
	Outcome outcome.Code
	Status  int
	OrderID string
	Latency time.Duration
}

// Result summarizes a burst.
type Result struct {
	Counts  map[outcome.Code]int
	Answers []Answer
	Elapsed time.Duration
}

// Reserved returns the order ids of the buyers who got a reservation.
func (r Result) Reserved() []string {
	var ids []string
	for _, a := range r.Answers {
		if a.Outcome == outcome.Reserved {
			ids = append(ids, a.OrderID)
		}
	}
	return ids
}

// Burst prepares every buyer (token, request body, idempotency key), parks them on a barrier,
// releases them at once and waits for all answers.
func Burst(ctx context.Context, cfg BurstConfig) (Result, error) {
	if cfg.Buyers < 1 {
		return Result{}, errors.New("burst needs at least one buyer")
	}
	if cfg.Conns < 1 {
		cfg.Conns = 256
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	client := NewClient(cfg.Conns, cfg.Timeout)
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("%s/api/v1/sales/%s/items/%s/purchase", cfg.BaseURL, cfg.SaleID, cfg.ItemID)
	now := time.Now()
	reqs := make([]*http.Request, cfg.Buyers)
	users := make([]string, cfg.Buyers)
	for i := range reqs {
		users[i] = cfg.UserPrefix + strconv.Itoa(i)
		tok, err := auth.Mint(cfg.Secret, users[i], now, time.Hour)
		if err != nil {
			return Result{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		if err != nil {
			return Result{}, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Idempotency-Key", users[i]+"-k1")
		reqs[i] = req
	}
	answers := make([]Answer, cfg.Buyers)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			<-release
			if cfg.Room {
				answers[i] = cfg.journey(ctx, client, reqs[i])
			} else {
				answers[i] = Do(client, reqs[i])
			}
			answers[i].User = users[i]
		})
	}
	start := time.Now()
	close(release)
	wg.Wait()
	res := Result{Counts: map[outcome.Code]int{}, Answers: answers, Elapsed: time.Since(start)}
	for _, a := range answers {
		res.Counts[a.Outcome]++
	}
	return res, nil
}

// NewClient returns an HTTP client that keeps up to conns connections to one server.
func NewClient(conns int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     conns,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// Do sends one request and classifies the answer.
func Do(client *http.Client, req *http.Request) Answer {
	start := time.Now()
	resp, err := client.Do(req)
	var a Answer
	if err != nil {
		a.Latency = time.Since(start)
		a.Outcome = TransportError
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			a.Outcome = Timeout
		}
		return a
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	a.Latency = time.Since(start)
	a.Status = resp.StatusCode
	a.Outcome, a.OrderID = Classify(resp.StatusCode, body)
	return a
}

// Classify maps a purchase answer to an outcome: the body's error code when it names one, else the
// status. 202 is RESERVED with the order id from the body.
func Classify(status int, body []byte) (outcome.Code, string) {
	var b struct {
		OrderID string       `json:"orderId"`
		Error   outcome.Code `json:"error"`
	}
	_ = json.Unmarshal(bytes.TrimSpace(body), &b)
	switch {
	case status == http.StatusAccepted && b.OrderID != "":
		return outcome.Reserved, b.OrderID
	case b.Error != "":
		return b.Error, ""
	case status >= 500:
		return ServerError, ""
	default:
		return outcome.Code("HTTP_" + strconv.Itoa(status)), ""
	}
}
