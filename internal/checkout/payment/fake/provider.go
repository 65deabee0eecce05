// Package fake is a payment provider to charge against in tests, demos and game days: it speaks the
// protocol payment.HTTPClient expects, records charges by idempotency key, and can be made slow,
// flaky or down (latency, decline and error rates, outage windows), deterministically from a seed
// and an injected clock.
package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/payment"
)

// Magic tokens decide a charge regardless of the configured rates. tokOK and tokDecline are still
// subject to outages and latency; tokError always fails and records nothing.
const (
	tokOK      = "tok_ok"
	tokDecline = "tok_decline"
	tokError   = "tok_error"
)

const maxBody = 16 << 10

// Stats counts what the provider has seen since it started.
type Stats struct {
	Charges   int64 `json:"charges"`   // charge requests received, valid or not
	Succeeded int64 `json:"succeeded"` // new charges that succeeded
	Declined  int64 `json:"declined"`  // new charges that were declined
	Replayed  int64 `json:"replayed"`  // charges answered from an earlier record of their key
	Errors    int64 `json:"errors"`    // 503 answers: injected errors and outages
	Rejected  int64 `json:"rejected"`  // 4xx answers to invalid requests
	Voided    int64 `json:"voided"`    // keys closed by a void without having been charged
}

// record is what the provider remembers about one idempotency key.
type record struct {
	ID          string         `json:"id"`
	Key         string         `json:"idempotencyKey"`
	Status      payment.Status `json:"status"`
	Reason      string         `json:"reason,omitempty"`
	AmountCents int64          `json:"amountCents"`
	Currency    string         `json:"currency,omitempty"`
}

// Provider is the fake payment provider. It is safe for concurrent use.
type Provider struct {
	now   func() time.Time
	start time.Time

	mu      sync.Mutex
	cfg     Config
	rng     *rand.Rand
	seq     int64
	records map[string]*record
	stats   Stats
}

// New returns a provider behaving as cfg says, with its clock started at now() (time.Now when nil).
// It panics when cfg is invalid (see Config.Validate): that is a bug in the caller.
func New(cfg Config, now func() time.Time) *Provider {
	if err := cfg.Validate(); err != nil {
		panic("fake.New: " + err.Error())
	}
	if now == nil {
		now = time.Now
	}
	cfg.Outages = append([]Window(nil), cfg.Outages...)
	return &Provider{
		now: now, start: now(), cfg: cfg,
		rng:     rand.New(rand.NewPCG(uint64(cfg.Seed), 0x9e3779b97f4a7c15)),
		records: make(map[string]*record),
	}
}

// Config returns the knobs in force now.
func (p *Provider) Config() Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cfg
	c.Outages = append([]Window(nil), c.Outages...)
	return c
}

// Configure replaces the knobs; cfg.Seed is ignored, the random source having been seeded by New.
func (p *Provider) Configure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cfg.Seed = p.cfg.Seed
	cfg.Outages = append([]Window(nil), cfg.Outages...)
	p.cfg = cfg
	return nil
}

// Stats returns the counts so far.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Handler serves the provider's API:
//
//	POST /v1/charges               charge {"idempotencyKey","amountCents","currency","token"}
//	GET  /v1/charges/{key}         the receipt recorded under key, or 404
//	POST /v1/charges/{key}/void    make key unusable; answers the Succeeded receipt if already charged
//	GET  /v1/behavior              the knobs, durations as "250ms", plus uptime
//	PUT  /v1/behavior              change the knobs; fields left out keep their values
//	GET  /v1/stats                 counts
func (p *Provider) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", p.charge)
	mux.HandleFunc("GET /v1/charges/{key}", p.lookup)
	mux.HandleFunc("POST /v1/charges/{key}/void", p.void)
	mux.HandleFunc("GET /v1/behavior", p.getBehavior)
	mux.HandleFunc("PUT /v1/behavior", p.putBehavior)
	mux.HandleFunc("GET /v1/stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, p.Stats()) })
	return mux
}

// Serve answers on ln until ctx ends, then shuts down. Requests still waiting out their latency are
// abandoned unrecorded, as if the provider had crashed mid-request.
func (p *Provider) Serve(ctx context.Context, ln net.Listener) error {
	base, abandon := context.WithCancel(context.Background())
	defer abandon()
	srv := &http.Server{
		Handler:           p.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("fake payment provider: %w", err)
	case <-ctx.Done():
	}
	abandon()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("fake payment provider: shut down: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("fake payment provider: %w", err)
	}
	return nil
}

func (p *Provider) charge(w http.ResponseWriter, r *http.Request) {
	p.count(func(s *Stats) { s.Charges++ })
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		p.reject(w, http.StatusBadRequest, "INVALID_REQUEST", "body: "+err.Error())
		return
	}
	req, err := parseCharge(body)
	if err != nil {
		p.reject(w, http.StatusBadRequest, "INVALID_REQUEST", err.Error())
		return
	}
	if p.failCharge(req.Token) {
		writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "provider unavailable; nothing was charged")
		return
	}
	if !p.wait(r.Context()) {
		return // the client gave up first: nothing charged
	}
	code, rec := p.settle(req)
	writeJSON(w, code, rec)
}

// failCharge decides, under the lock, whether this charge meets an outage or an injected error.
func (p *Provider) failCharge(token string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	roll := p.rng.Float64() // drawn every time, so one charge's token does not shift the next one's luck
	fail := p.inOutage() || token == tokError || (token != tokOK && token != tokDecline && roll < p.cfg.ErrorRate)
	if fail {
		p.stats.Errors++
	}
	return fail
}

// settle records a new charge or answers the one recorded under its key.
func (p *Provider) settle(req chargeRequest) (int, any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	roll := p.rng.Float64()
	if rec, ok := p.records[req.Key]; ok {
		switch {
		case rec.Status == payment.Voided:
			p.stats.Rejected++
			return http.StatusConflict, struct {
				Error string `json:"error"`
				record
			}{"KEY_VOIDED", *rec}
		case rec.AmountCents != req.AmountCents || rec.Currency != req.Currency:
			p.stats.Rejected++
			return http.StatusUnprocessableEntity, errorBody{"IDEMPOTENCY_MISMATCH",
				fmt.Sprintf("key %s was charged %d %s, not %d %s", req.Key, rec.AmountCents, rec.Currency, req.AmountCents, req.Currency)}
		}
		p.stats.Replayed++
		return http.StatusOK, *rec
	}
	rec := p.newRecord(req.Key)
	rec.AmountCents, rec.Currency = req.AmountCents, req.Currency
	if req.Token == tokDecline || (req.Token != tokOK && roll < p.cfg.DeclineRate) {
		rec.Status, rec.Reason = payment.Declined, "card_declined"
		p.stats.Declined++
	} else {
		rec.Status = payment.Succeeded
		p.stats.Succeeded++
	}
	return http.StatusOK, *rec
}

func (p *Provider) lookup(w http.ResponseWriter, r *http.Request) {
	key, ok := p.pathKey(w, r)
	if !ok || !p.wait(r.Context()) {
		return
	}
	p.mu.Lock()
	rec, found := p.records[key]
	var c record
	if found {
		c = *rec
	}
	p.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no charge under key "+key)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (p *Provider) void(w http.ResponseWriter, r *http.Request) {
	key, ok := p.pathKey(w, r)
	if !ok || !p.wait(r.Context()) {
		return
	}
	p.mu.Lock()
	rec, found := p.records[key]
	switch {
	case !found:
		rec = p.newRecord(key)
		rec.Status, rec.Reason = payment.Voided, "voided_before_charge"
		p.stats.Voided++
	case rec.Status == payment.Declined:
		// Declined never took money; voiding it closes the key the same way.
		rec.Status, rec.Reason = payment.Voided, "voided_after_decline"
		p.stats.Voided++
	}
	c := *rec
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, c)
}

// pathKey validates the {key} of a lookup or void and answers 400 or an outage's 503 itself.
func (p *Provider) pathKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key := r.PathValue("key")
	if err := checkKey(key); err != nil {
		p.reject(w, http.StatusBadRequest, "INVALID_REQUEST", err.Error())
		return "", false
	}
	p.mu.Lock()
	down := p.inOutage()
	if down {
		p.stats.Errors++
	}
	p.mu.Unlock()
	if down {
		writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "provider unavailable")
		return "", false
	}
	return key, true
}

// wait sleeps Latency±Jitter and reports false when the request ended first.
func (p *Provider) wait(ctx context.Context) bool {
	p.mu.Lock()
	d := p.cfg.Latency
	if p.cfg.Jitter > 0 {
		d += time.Duration((p.rng.Float64()*2 - 1) * float64(p.cfg.Jitter))
	}
	p.mu.Unlock()
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// inOutage must be called with p.mu held.
func (p *Provider) inOutage() bool {
	since := p.now().Sub(p.start)
	for _, w := range p.cfg.Outages {
		if w.Contains(since) {
			return true
		}
	}
	return false
}

// newRecord must be called with p.mu held.
func (p *Provider) newRecord(key string) *record {
	p.seq++
	rec := &record{ID: fmt.Sprintf("ch_%08d", p.seq), Key: key}
	p.records[key] = rec
	return rec
}

func (p *Provider) getBehavior(w http.ResponseWriter, _ *http.Request) {
	d := docOf(p.Config())
	d.Uptime = p.now().Sub(p.start).Round(time.Millisecond).String()
	writeJSON(w, http.StatusOK, d)
}

func (p *Provider) putBehavior(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST", "behavior: "+err.Error())
		return
	}
	// Hold the lock across read-modify-write so two game-day steps cannot undo each other.
	p.mu.Lock()
	defer p.mu.Unlock()
	d := docOf(p.cfg)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST", "behavior: "+err.Error())
		return
	}
	cfg, err := d.apply(p.cfg)
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST", "behavior: "+err.Error())
		return
	}
	p.cfg = cfg
	writeJSON(w, http.StatusOK, docOf(cfg))
}

func (p *Provider) count(f func(*Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

func (p *Provider) reject(w http.ResponseWriter, code int, errCode, msg string) {
	p.count(func(s *Stats) { s.Rejected++ })
	writeError(w, code, errCode, msg)
}

type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, code int, errCode, msg string) {
	writeJSON(w, code, errorBody{errCode, msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client has gone if this fails; nothing to tell it
}
