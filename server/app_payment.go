package server

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/payment/fake"
)

// openPayments builds the payment client behind its circuit breaker; with no provider URL it starts
// the bundled fake provider on a loopback port.
func (a *App) openPayments(cfg AppConfig) (*payment.Breaker, error) {
	url := cfg.PaymentURL
	if url == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("start the bundled payment provider: %w", err)
		}
		a.fakePay = &http.Server{Handler: fake.New(fake.Config{}, nil).Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = a.fakePay.Serve(ln) }()
		url = "http://" + ln.Addr().String()
		a.log.Warn("no --payment-url: using the bundled fake payment provider (tok_ok pays, tok_decline declines)", "url", url)
	}
	client := payment.NewHTTPClient(url, cfg.Lifecycle.PaymentTimeout)
	client.Trace(cfg.Tracer)
	return payment.NewBreaker(client, cfg.Breaker, func(name string, from, to payment.State) {
		a.log.Warn("payment circuit breaker changed state", "breaker", name, "from", from.String(), "to", to.String())
		if a.Server != nil {
			a.Server.SetBreakerState(int(to))
		}
	}), nil
}
