package server

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// A held answer is reused once sent (heldAnswers): nothing of one purchase's answer, a header, its
// status or its body, may reach the next one's, even from purchases running side by side.
func TestHeldAnswersDoNotLeakIntoTheNext(t *testing.T) {
	s := &Server{cfg: Config{PurchaseDeadline: time.Minute}}
	h := s.answerWithin(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("busy") != "" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"UNAVAILABLE","message":"a longer message than the next one's"}`))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status":"PENDING"}`))
	})
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			busy := i%2 == 0
			url := "/purchase"
			if busy {
				url += "?busy=1"
			}
			rec := httptest.NewRecorder()
			h(rec, httptest.NewRequest(http.MethodPost, url, nil))
			switch {
			case busy && (rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1"):
				t.Errorf("busy answer %d %v", rec.Code, rec.Header())
			case !busy && (rec.Code != http.StatusAccepted || rec.Header().Get("Retry-After") != "" || rec.Body.String() != `{"status":"PENDING"}`):
				t.Errorf("202 answer %d %v %q: something of another answer leaked in", rec.Code, rec.Header(), rec.Body)
			}
		})
	}
	wg.Wait()
}

// A purchase past its deadline: the buyer hears the 503 at the deadline, whole, with Retry-After
// and Connection: close (so a retry does not queue behind the purchase on the same connection),
// while the purchase goes on and what it writes later is dropped. Both ways a purchase runs: on the
// request's own goroutine (no body) and on a worker (a body). A purchase answered in time is sent
// as it wrote it, and a buyer who hangs up is not counted past the deadline.
func TestALatePurchaseIsAnsweredAtItsDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	s := &Server{cfg: Config{PurchaseDeadline: deadline}, metrics: newMetrics(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ended := make(chan string, 4)
	srv := httptest.NewServer(s.answerWithin(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("late") == "" {
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"status":"PENDING"}`))
			return
		}
		_, _ = io.ReadAll(r.Body) // as the purchase does, first
		time.Sleep(3 * deadline)  // a frozen store: the purchase goes on past its deadline
		if r.Context().Err() == nil {
			t.Errorf("%s: the purchase's context had not ended at 3x its deadline", r.URL.RawQuery)
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status":"PENDING"}`))
		ended <- r.URL.RawQuery
	}))
	defer srv.Close()
	client := &http.Client{Timeout: 10 * deadline}
	for _, body := range []string{"", "{}"} {
		start := time.Now()
		resp, err := client.Post(srv.URL+"/purchase?late=1&body="+body, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
			!strings.Contains(string(b), `"error":"UNAVAILABLE"`) || !strings.Contains(string(b), "purchase deadline (300ms)") {
			t.Errorf("body %q: answer %d %v %s, want 503 UNAVAILABLE, Retry-After 1, the deadline named", body, resp.StatusCode, resp.Header, b)
		}
		if body == "" && !resp.Close {
			t.Errorf("late answer without Connection: close: %v", resp.Header)
		}
		if took >= 2*deadline {
			t.Errorf("body %q: answered after %s, want at the %s deadline", body, took, deadline)
		}
		select {
		case q := <-ended:
			t.Errorf("the purchase (%s) ended before its late answer came: it did not outlive the deadline", q)
		default:
		}
		select {
		case <-ended: // the purchase went on to its end
		case <-time.After(10 * deadline):
			t.Errorf("body %q: the purchase never ended", body)
		}
	}
	if got := pastDeadline(t, s); got != 2 {
		t.Errorf("past deadline counted %v times, want 2", got)
	}
	// In time, on the same server: as written, the connection kept.
	resp, err := client.Post(srv.URL+"/purchase", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || string(b) != `{"status":"PENDING"}` || resp.Close {
		t.Errorf("in time: %d %q close=%v, want 202 as written", resp.StatusCode, b, resp.Close)
	}
	// A buyer who hangs up before the deadline, both ways: nothing counted past it.
	for _, body := range []string{"", "{}"} {
		ctx, cancel := context.WithTimeout(context.Background(), deadline/3)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/purchase?late=1", strings.NewReader(body))
		if body == "" {
			req.Body = http.NoBody
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("the hung-up buyer (body %q) got an answer: %d", body, resp.StatusCode)
		}
		cancel()
		<-ended
	}
	if got := pastDeadline(t, s); got != 2 {
		t.Errorf("a buyer who hung up was counted past the deadline: %v, want 2", got)
	}
}

func pastDeadline(t *testing.T, s *Server) float64 {
	var m dto.Metric
	if err := s.metrics.pastDeadline.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A purchase that panics runs into net/http's own recovery, past its deadline (the late answer
// went out first) and in time (the connection is dropped, no answer sent), with the race detector
// watching the deadline's timer and the request's goroutine.
func TestALatePurchaseThatPanics(t *testing.T) {
	const deadline = 100 * time.Millisecond
	s := &Server{cfg: Config{PurchaseDeadline: deadline}, metrics: newMetrics(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := httptest.NewUnstartedServer(s.answerWithin(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("late") != "" {
			time.Sleep(2 * deadline)
		}
		panic("purchase broke")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/purchase?late=1", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("late, then a panic: %d, want the deadline's 503", resp.StatusCode)
	}
	if resp, err := http.Post(srv.URL+"/purchase", "application/json", nil); err == nil {
		resp.Body.Close()
		t.Errorf("a purchase that panicked in time answered %d, want net/http's dropped connection", resp.StatusCode)
	}
}

// Over HTTP/2 a late purchase runs on a worker: an HTTP/2 answer ends (END_STREAM) only when its
// handler returns, so one written by the deadline's timer would leave the buyer waiting for its end
// until the purchase's. The test speaks h2c frames itself, to see when the stream ends.
func TestALatePurchaseOverHTTP2(t *testing.T) {
	const deadline = 300 * time.Millisecond
	s := &Server{cfg: Config{PurchaseDeadline: deadline}, metrics: newMetrics(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ended := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(s.answerWithin(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * deadline)
		w.WriteHeader(http.StatusAccepted)
		ended <- struct{}{}
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fr := http2.NewFramer(conn, conn)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "checkout"}, {":path", "/purchase"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	start := time.Now()
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * deadline))
	status := ""
	for done := false; !done; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			fields, err := hpack.NewDecoder(4096, nil).DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				t.Fatal(err)
			}
			for _, hf := range fields {
				if hf.Name == ":status" {
					status = hf.Value
				}
			}
			done = f.StreamEnded()
		case *http2.DataFrame:
			done = f.StreamEnded()
		}
	}
	if took := time.Since(start); status != "503" || took >= 2*deadline {
		t.Errorf("late purchase over HTTP/2: status %s, its stream ended after %s; want the deadline's 503, ended by about %s", status, took, deadline)
	}
	<-ended
}
