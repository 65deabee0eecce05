package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// Journey is what one click of a buyer does. Prepare runs before the release and does all the
// work that can be done early, so the release only sends bytes; a waiting-room journey or a
// pay/abandon journey is another implementation.
type Journey interface {
	Prepare(p Plan, b Buyer, key, token string) (Attempt, error)
}

// Attempt sends one try of a prepared click and fills rec (Status, Outcome, OrderID, Error and
// the times). It is called again, with the same key, for retries and replays.
type Attempt func(ctx context.Context, c *http.Client, rec *Record)

// Purchase is the direct journey: one POST to the item's purchase endpoint.
type Purchase struct{}

// maxBody is how much of an answer is read for classification; a flash-sale answer is tiny.
const maxBody = 64 << 10

// Prepare builds the purchase request with the buyer's token and key.
func (Purchase) Prepare(p Plan, b Buyer, key, token string) (Attempt, error) {
	req, err := purchaseRequest(p, b, key, token)
	if err != nil {
		return nil, err
	}
	cls, err := p.classifier() // Run sets it once; this serves a caller preparing by hand
	if err != nil {
		return nil, err
	}
	now := p.now
	u := req.URL.String() // every try's record names it: rendered once, before the release
	return func(ctx context.Context, c *http.Client, rec *Record) {
		rec.Method, rec.URL = req.Method, u
		send(ctx, c, req, cls, now, rec)
	}, nil
}

// purchaseRequest renders a buyer's purchase from the profile's template with its token and key;
// every journey and both engines end with it. Its GetBody resends the same bytes on every try.
func purchaseRequest(p Plan, b Buyer, key, token string) (*http.Request, error) {
	req, err := p.target().PurchaseRequest(p.BaseURL, profile.Buy{Sale: b.Target.SaleID, Item: b.Target.ItemID,
		User: b.User, Key: key, Token: token, Buyer: b.Index})
	if err != nil {
		return nil, fmt.Errorf("buyer %d: %w", b.Index, err)
	}
	return req, nil
}

// fresh is one try of a prepared request: a copy with its own context and a new reader over the
// same body, since a sent body is used up. The copy is shallow (WithContext, not Clone): it shares
// the prepared request's URL and header, which no journey changes once it sends them (a try that
// timed out may still be read by the transport while the next one goes), and copying the header
// of every try was a good part of what a request cost the http engine.
func fresh(ctx context.Context, req *http.Request) (*http.Request, error) {
	r := req.WithContext(ctx)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	return r, nil
}

// send runs one traced request and classifies its answer.
func send(ctx context.Context, c *http.Client, req *http.Request, cls *Classifier, now func() time.Time, rec *Record) {
	if resp, body, ok := exchange(ctx, c, req, now, rec); ok {
		rec.Outcome, rec.OrderID = cls.Classify(resp.StatusCode, body)
	}
}

// exchange runs one traced request and fills rec with its times, status and size; it returns the
// answer and its body (read up to maxBody) when a whole answer came, and records the failure in
// rec otherwise. send classifies what it returns; a page read keeps the answer's ETag.
func exchange(ctx context.Context, c *http.Client, req *http.Request, now func() time.Time, rec *Record) (*http.Response, []byte, bool) {
	// WroteRequest runs on the transport's writer goroutine, which may still be running when Do
	// returns early (an answer before the body is out): hand its time over atomically.
	var wrote, first atomic.Int64
	start := now()
	trace := &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			if i.Conn != nil {
				rec.Conn = i.Conn.LocalAddr().String()
			}
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { wrote.Store(int64(now().Sub(start)) + 1) },
		GotFirstResponseByte: func() { first.Store(int64(now().Sub(start)) + 1) },
	}
	rec.Started = start
	try, err := fresh(httptrace.WithClientTrace(ctx, trace), req)
	var resp *http.Response
	if err == nil {
		resp, err = c.Do(try)
	}
	if d := wrote.Load(); d > 0 {
		rec.Written = start.Add(time.Duration(d - 1))
	}
	if d := first.Load(); d > 0 {
		rec.FirstByte = start.Add(time.Duration(d - 1))
	}
	if err != nil {
		rec.Done = now()
		rec.failed(err)
		return nil, nil, false
	}
	body, err := readBody(resp)
	resp.Body.Close()
	rec.Done = now()
	rec.Status, rec.Proto, rec.BytesIn = resp.StatusCode, resp.Proto, len(body)
	rec.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), rec.Done)
	if err != nil {
		rec.failed(err)
		return nil, nil, false
	}
	return resp, body, true
}

// readBody reads an answer's body up to maxBody. An HTTP/1.x answer that has none (a 204, a
// Content-Length of 0: the transport gives it an empty body, http.NoBody under the client's
// wrapper) reads as io.ReadAll reads that, without ReadAll's 512-byte buffer; closing the body
// still stops the client's timer. HTTP/2 is read as ever: its length is the server's word.
func readBody(resp *http.Response) ([]byte, error) {
	if resp.ProtoMajor == 1 && resp.ContentLength == 0 {
		return []byte{}, nil
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxBody))
}

// failed records a request that got no whole answer: TIMEOUT when the network gave up waiting,
// else TRANSPORT_ERROR.
func (rec *Record) failed(err error) {
	rec.Error = err.Error()
	rec.Outcome = TransportError
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		rec.Outcome = Timeout
	}
}
