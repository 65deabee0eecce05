package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// Reveal is the journey of a sale that reveals its purchase path at the opening (fsctl serve's
// sale option reveal): the plain purchase route refuses such a sale, and before the opening
// nobody can learn where to buy. At the release each click asks the profile's
// http.purchasePath (fsctl serve's GET /api/v1/sales/{sale}/items/{item}/purchase-path) for its buyer's path (a signed, short-lived
// token in it) and POSTs the purchase, built from the profile's template as ever, to that path.
// A click keeps its path for its retries; a purchase answered 403 (the path expired, or the
// server's key changed) fetches a new path once and buys again. For a sale without reveal the
// endpoint names the plain route, so the journey works there too, one GET dearer.
type Reveal struct {
	fetched, failed, refetched, refused atomic.Int64
}

// RevealCounts says how the buyers' paths went.
type RevealCounts struct {
	// Fetched counts the paths the server handed out; Failed the asks it refused or never
	// answered (NOT_STARTED before the opening, a transport error...): those clicks bought nothing.
	Fetched, Failed int64
	// Refetched counts purchases answered 403 whose click fetched a new path and tried again;
	// Refused those answered 403 through a path fetched just before.
	Refetched, Refused int64
}

// Counts returns what the buyers' paths did so far.
func (j *Reveal) Counts() RevealCounts {
	return RevealCounts{Fetched: j.fetched.Load(), Failed: j.failed.Load(), Refetched: j.refetched.Load(), Refused: j.refused.Load()}
}

// RevealPath is the endpoint that answers a buyer's purchase path of target t, under base: the
// profile's http.purchasePath.
func RevealPath(prof *profile.Profile, base string, t Target) string {
	return profile.Route(base, prof.HTTP.PurchasePath, profile.Vars{"sale": t.SaleID, "item": t.ItemID})
}

// Prepare builds the path request and the purchase; the purchase's URL is the path, per try.
func (j *Reveal) Prepare(p Plan, b Buyer, key, token string) (Attempt, error) {
	buy, err := purchaseRequest(p, b, key, token)
	if err != nil {
		return nil, err
	}
	ask, err := j.askRequest(p, b, token)
	if err != nil {
		return nil, err
	}
	cls, err := p.classifier()
	if err != nil {
		return nil, err
	}
	now := p.now
	var path string // kept across retries of the click
	return func(ctx context.Context, c *http.Client, rec *Record) {
		start := now()
		j.buy(ctx, c, p.BaseURL, ask, buy, &path, cls, now, rec)
		rec.Started = start
	}, nil
}

// askRequest is the GET of a buyer's purchase path, with the buyer's token.
func (j *Reveal) askRequest(p Plan, b Buyer, token string) (*http.Request, error) {
	ask, err := http.NewRequest(http.MethodGet, RevealPath(p.target(), p.BaseURL, b.Target), nil)
	if err != nil {
		return nil, fmt.Errorf("buyer %d: purchase-path request: %w", b.Index, err)
	}
	ask.Header.Set("Authorization", "Bearer "+token)
	return ask, nil
}

// buy sends one try of a click: the path (fetched unless *path holds one), then the purchase to
// it. rec ends with the purchase's answer, or the path request's when that failed.
func (j *Reveal) buy(ctx context.Context, c *http.Client, base string, ask, buy *http.Request, path *string,
	cls *Classifier, now func() time.Time, rec *Record) {
	for refetch := 0; ; refetch++ {
		justFetched := *path == ""
		if justFetched {
			if *path = j.fetch(ctx, c, ask, cls, now, rec); *path == "" {
				return
			}
		}
		u, err := url.Parse(strings.TrimRight(base, "/") + *path)
		if err != nil {
			rec.Outcome, rec.Error = ClientError, fmt.Sprintf("purchase path %q: %v", *path, err)
			*path = ""
			return
		}
		req := buy.Clone(ctx)
		req.URL, req.Host = u, u.Host
		rec.Method, rec.URL = req.Method, req.URL.String()
		send(ctx, c, req, cls, now, rec)
		if rec.Status != http.StatusForbidden {
			return
		}
		// 403: the path is no good (expired while the click waited or retried, or the server's
		// key changed). One new path per try: a 403 through a path fetched just now is the
		// answer, not something another path would change.
		*path = ""
		if justFetched || refetch > 0 {
			j.refused.Add(1)
			rec.Error = "the purchase through a purchase path fetched just before was refused (403)"
			return
		}
		j.refetched.Add(1)
	}
}

// fetch asks for the buyer's purchase path; on anything but a usable path it fills rec with that
// answer (classified as a purchase answer would be: NOT_STARTED before the opening) and returns "".
func (j *Reveal) fetch(ctx context.Context, c *http.Client, ask *http.Request, cls *Classifier, now func() time.Time, rec *Record) string {
	rec.Method, rec.URL = ask.Method, ask.URL.String()
	resp, body, ok := exchange(ctx, c, ask, now, rec)
	if !ok {
		j.failed.Add(1)
		return ""
	}
	if resp.StatusCode != http.StatusOK {
		j.failed.Add(1)
		rec.Outcome, rec.OrderID = cls.Classify(resp.StatusCode, body)
		return ""
	}
	var a struct {
		PurchasePath string `json:"purchasePath"`
	}
	// The path must stay on the target: a path, never a URL of another host.
	if err := json.Unmarshal(body, &a); err != nil || !strings.HasPrefix(a.PurchasePath, "/") || strings.HasPrefix(a.PurchasePath, "//") {
		j.failed.Add(1)
		rec.Outcome, rec.Error = ClientError, fmt.Sprintf("GET %s answered no purchase path: %.200s", ask.URL, body)
		return ""
	}
	j.fetched.Add(1)
	return a.PurchasePath
}

// Reveals reports whether the plan's buyers follow revealed purchase paths (Reveal, or a Room
// with Reveal set).
func (p Plan) Reveals() bool { return p.RevealJourney() != nil }

// RevealJourney is the Reveal the plan's buyers follow (the journey itself, or a Room's); nil
// when they do not follow one.
func (p Plan) RevealJourney() *Reveal {
	switch j := p.Journey.(type) {
	case *Reveal:
		return j
	case *Room:
		return j.Reveal
	}
	return nil
}
