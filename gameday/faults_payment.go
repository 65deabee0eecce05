package gameday

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// paymentFault changes the provider's behaviour through its API and puts it back afterwards.
// Negative numbers mean "unchanged".
type paymentFault struct {
	DeclineRate, ErrorRate float64
	Latency, Jitter        time.Duration
	Outage                 bool
	For                    time.Duration
}

func (paymentFault) Name() string { return "payment" }
func (f paymentFault) Describe() string {
	var parts []string
	if f.Outage {
		parts = append(parts, "outage")
	}
	if f.DeclineRate >= 0 {
		parts = append(parts, fmt.Sprintf("decline %g", f.DeclineRate))
	}
	if f.ErrorRate >= 0 {
		parts = append(parts, fmt.Sprintf("errors %g", f.ErrorRate))
	}
	if f.Latency >= 0 {
		parts = append(parts, fmt.Sprintf("latency %s", f.Latency))
	}
	if f.Jitter >= 0 {
		parts = append(parts, fmt.Sprintf("jitter %s", f.Jitter))
	}
	return fmt.Sprintf("payment provider %v for %s", parts, f.For)
}

// behavior is the fake provider's /v1/behavior document.
type behavior struct {
	Latency     string   `json:"latency"`
	Jitter      string   `json:"jitter"`
	DeclineRate float64  `json:"declineRate"`
	ErrorRate   float64  `json:"errorRate"`
	Outages     []window `json:"outages"`
	Uptime      string   `json:"uptime,omitempty"`
}

type window struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func (f paymentFault) Apply(ctx context.Context, env *Env) (string, error) {
	before, err := getBehavior(ctx, env.PaymentURL)
	if err != nil {
		return "", err
	}
	b := before
	b.Uptime = ""
	if f.Outage {
		up, err := time.ParseDuration(before.Uptime)
		if err != nil {
			return "", fmt.Errorf("provider uptime %q: %w", before.Uptime, err)
		}
		b.Outages = append(slices.Clone(b.Outages), window{From: up.String(), To: (up + f.For).String()})
	}
	if f.DeclineRate >= 0 {
		b.DeclineRate = f.DeclineRate
	}
	if f.ErrorRate >= 0 {
		b.ErrorRate = f.ErrorRate
	}
	if f.Latency >= 0 {
		b.Latency = f.Latency.String()
	}
	if f.Jitter >= 0 {
		b.Jitter = f.Jitter.String()
	}
	if err := putBehavior(ctx, env.PaymentURL, b); err != nil {
		return "", err
	}
	env.Note("payment provider: %s", f.Describe())
	if err := sleep(ctx, f.For); err != nil {
		return "", err
	}
	// Put the knobs back; an outage window simply ends on its own.
	restore := b
	restore.Latency, restore.Jitter, restore.DeclineRate, restore.ErrorRate = before.Latency, before.Jitter, before.DeclineRate, before.ErrorRate
	if err := putBehavior(context.WithoutCancel(ctx), env.PaymentURL, restore); err != nil {
		return "", err
	}
	env.Note("payment provider back to normal")
	return "applied and restored", nil
}

func getBehavior(ctx context.Context, base string) (behavior, error) {
	var b behavior
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/behavior", nil)
	if err != nil {
		return b, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return b, fmt.Errorf("payment provider %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("payment provider GET /v1/behavior: %s", resp.Status)
	}
	return b, json.NewDecoder(resp.Body).Decode(&b)
}

func putBehavior(ctx context.Context, base string, b behavior) error {
	body, _ := json.Marshal(b)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/v1/behavior", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("payment provider %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("payment provider PUT /v1/behavior: %s: %s", resp.Status, msg)
	}
	return nil
}
