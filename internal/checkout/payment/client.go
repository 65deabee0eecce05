package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// DefaultTimeout bounds one provider call when NewHTTPClient is given no timeout.
const DefaultTimeout = 5 * time.Second

// maxAnswer caps how much of a provider's answer is read; receipts are a few hundred bytes.
const maxAnswer = 64 << 10

// HTTPClient talks JSON to a payment provider (the bundled fake, or anything speaking its protocol).
// It is safe for concurrent use.
type HTTPClient struct {
	base    string
	timeout time.Duration
	hc      *http.Client
	// tracer is nil unless Trace turned tracing on.
	tracer trace.Tracer
}

// Trace gives each provider call a client span, and the provider the trace context (traceparent).
func (c *HTTPClient) Trace(tp trace.TracerProvider) { c.tracer = tracing.Tracer(tp) }

// NewHTTPClient returns a client for the provider at baseURL (for example http://127.0.0.1:8090).
// timeout bounds each call, DefaultTimeout when it is not positive; a charge that runs past it after
// it was sent ends in ErrUnknownOutcome.
func NewHTTPClient(baseURL string, timeout time.Duration) *HTTPClient {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // a checkout charges many orders at once; keep their connections warm
	return &HTTPClient{base: strings.TrimRight(baseURL, "/"), timeout: timeout, hc: &http.Client{Transport: tr}}
}

type chargeBody struct {
	IdempotencyKey string `json:"idempotencyKey"`
	AmountCents    int64  `json:"amountCents"`
	Currency       string `json:"currency"`
	Token          string `json:"token"`
}

type receiptBody struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	Reason string `json:"reason"`
}

// Charge asks the provider to charge ch. A decline is a receipt, not an error. Errors wrap
// ErrUnavailable (not charged), ErrUnknownOutcome (perhaps charged: void the order id to settle it),
// the caller's context error, or are plain errors naming the provider's status and answer (a request
// the provider refused, such as an invalid token).
func (c *HTTPClient) Charge(ctx context.Context, ch Charge) (Receipt, error) {
	op := "charge " + ch.OrderID.String()
	body, err := json.Marshal(chargeBody{
		IdempotencyKey: ch.OrderID.String(), AmountCents: ch.AmountCents, Currency: ch.Currency, Token: ch.Token,
	})
	if err != nil {
		return Receipt{}, fmt.Errorf("%s: %w", op, err)
	}
	code, answer, err := c.do(ctx, op, http.MethodPost, "/v1/charges", ch.OrderID, body, true)
	if err != nil {
		return Receipt{}, err
	}
	switch {
	case code == http.StatusOK || code == http.StatusCreated:
		r, ok := decodeReceipt(answer, Succeeded, Declined, Voided)
		if !ok {
			// The provider acted on the charge but its answer cannot be read: treat it as a lost answer.
			return Receipt{}, fmt.Errorf("%s: unreadable answer %q: %w", op, snippet(answer), ErrUnknownOutcome)
		}
		return r, nil
	case code == http.StatusPaymentRequired: // providers that answer declines with 402
		if r, ok := decodeReceipt(answer, Declined); ok {
			return r, nil
		}
	case code == http.StatusConflict: // the key was voided before this charge: never charged
		if r, ok := decodeReceipt(answer, Voided); ok {
			return r, nil
		}
	}
	return Receipt{}, statusError(op, code, answer, true)
}

// Lookup returns the receipt recorded under orderID; found is false when the provider has none.
// Lookups have no side effect, so a lost answer wraps ErrUnavailable rather than ErrUnknownOutcome.
func (c *HTTPClient) Lookup(ctx context.Context, orderID uuid.UUID) (r Receipt, found bool, err error) {
	op := "look up charge " + orderID.String()
	code, answer, err := c.do(ctx, op, http.MethodGet, "/v1/charges/"+url.PathEscape(orderID.String()), orderID, nil, false)
	if err != nil {
		return Receipt{}, false, err
	}
	switch code {
	case http.StatusOK:
		if r, ok := decodeReceipt(answer, Succeeded, Declined, Voided); ok {
			return r, true, nil
		}
		return Receipt{}, false, fmt.Errorf("%s: unreadable answer %q", op, snippet(answer))
	case http.StatusNotFound:
		return Receipt{}, false, nil
	}
	return Receipt{}, false, statusError(op, code, answer, false)
}

// Void makes orderID unusable for any later charge. When the order was already charged, the answer
// is that Succeeded receipt and the order counts as paid; otherwise it is a Voided receipt. Void is
// idempotent: after ErrUnknownOutcome or ErrUnavailable, call it again.
func (c *HTTPClient) Void(ctx context.Context, orderID uuid.UUID) (Receipt, error) {
	op := "void charge " + orderID.String()
	code, answer, err := c.do(ctx, op, http.MethodPost, "/v1/charges/"+url.PathEscape(orderID.String())+"/void", orderID, nil, true)
	if err != nil {
		return Receipt{}, err
	}
	if code == http.StatusOK {
		if r, ok := decodeReceipt(answer, Succeeded, Voided, Declined); ok {
			return r, nil
		}
		return Receipt{}, fmt.Errorf("%s: unreadable answer %q: %w", op, snippet(answer), ErrUnknownOutcome)
	}
	return Receipt{}, statusError(op, code, answer, true)
}

// do sends one request and reads the answer. sideEffect says whether a request that was sent but
// not answered may have changed something at the provider (ErrUnknownOutcome) or not (ErrUnavailable).
func (c *HTTPClient) do(ctx context.Context, op, method, path string, key uuid.UUID, body []byte, sideEffect bool) (int, []byte, error) {
	ctx, span := tracing.Start(ctx, c.tracer, "payment "+strings.SplitN(op, " ", 2)[0], // op names the order tootrace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", method), attribute.String("fsctl.order", key.String())))
	status, answer, err := c.send(ctx, op, method, path, key, body, sideEffect)
	if err == nil {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	}
	tracing.Fail(span, err)
	span.End()
	return status, answer, err
}

func (c *HTTPClient) send(ctx context.Context, op, method, path string, key uuid.UUID, body []byte, sideEffect bool) (int, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", op, err) // nothing sent
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(callCtx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// The header also tells net/http the request is safe to resend on a keep-alive connection that
	// the provider closed before reading it.
	req.Header.Set("Idempotency-Key", key.String())
	if c.tracer != nil {
		tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, transportError(ctx, op, err, sideEffect)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil && resp.StatusCode < 500 {
		return 0, nil, transportError(ctx, op, err, sideEffect)
	}
	return resp.StatusCode, answer, nil
}

// transportError classifies a failure to get an answer. Only a failed dial proves nothing was sent.
func transportError(caller context.Context, op string, err error, sideEffect bool) error {
	lost := ErrUnknownOutcome
	if !sideEffect {
		lost = ErrUnavailable
	}
	if cerr := caller.Err(); cerr != nil {
		return fmt.Errorf("%s: %w: %w", op, lost, cerr)
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if (errors.As(err, &opErr) && opErr.Op == "dial") || errors.As(err, &dnsErr) {
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w: %w", op, lost, err)
}

// statusError turns an unexpected answer into an error. 5xx means the provider did not act, except a
// gateway timeout (504): a proxy gave up waiting, and the provider behind it may still have acted.
func statusError(op string, code int, answer []byte, sideEffect bool) error {
	switch {
	case code == http.StatusGatewayTimeout && sideEffect:
		return fmt.Errorf("%s: provider answered %d %q: %w", op, code, snippet(answer), ErrUnknownOutcome)
	case code >= 500:
		return fmt.Errorf("%s: provider answered %d %q: %w", op, code, snippet(answer), ErrUnavailable)
	}
	return fmt.Errorf("%s: provider answered %d %q", op, code, snippet(answer))
}

// decodeReceipt reads a receipt whose status is one of want.
func decodeReceipt(answer []byte, want ...Status) (Receipt, bool) {
	var b receiptBody
	if err := json.Unmarshal(answer, &b); err != nil {
		return Receipt{}, false
	}
	for _, s := range want {
		if b.Status == s {
			return Receipt(b), true
		}
	}
	return Receipt{}, false
}

func snippet(b []byte) string {
	const most = 200
	s := strings.TrimSpace(string(b))
	if len(s) > most {
		s = s[:most] + "…"
	}
	return s
}
