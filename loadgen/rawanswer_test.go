package loadgen

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// rawAnswerCases are pipelined answers as servers write them: lengths, chunks, closes, 1.0,
// headers in any case, and the answer after each to prove the stream stays in step.
var rawAnswerCases = []string{
	"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"orderId\":\"o-1\"}",
	"HTTP/1.1 409 Conflict\r\ncontent-length: 21\r\nretry-after: 2\r\n\r\n{\"code\":\"SOLD_OUT\"}\n\n",
	"HTTP/1.1 204 No Content\r\nDate: Fri, 04 Dec 2026 09:00:00 GMT\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
	"HTTP/1.1 503 Service Unavailable\r\nRetry-After:   5  \r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.0 200 OK\r\nConnection: Keep-Alive, Upgrade\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive, close\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nConnection: Upgrade\r\nconnection: CLOSE\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 429 Too Many Requests\nContent-Length: 3\n\nbye",
	"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\noops",
	"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", 4000) + "\r\nContent-Length: 1\r\n\r\n!",
}

const nextAnswer = "HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\nnext"

// TestRawAnswerReadsWhatNetHTTPReads holds the raw engine's answer reader to net/http's
// ReadResponse on every case: status, protocol, close, Retry-After and body, and the next answer
// on the same stream after it.
func TestRawAnswerReadsWhatNetHTTPReads(t *testing.T) {
	for _, c := range rawAnswerCases {
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(c+nextAnswer)), nil)
		if err != nil {
			t.Fatalf("net/http cannot read the case %q: %v", c, err)
		}
		want, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReaderSize(strings.NewReader(c+nextAnswer), 16<<10)
		got, err := readRawAnswer(br, new(bytes.Buffer))
		if err != nil {
			t.Errorf("%q: %v", c, err)
			continue
		}
		if got.status != resp.StatusCode || got.proto != resp.Proto || got.close != resp.Close ||
			got.retryAfter != resp.Header.Get("Retry-After") || !bytes.Equal(got.body, want) || !got.headed {
			t.Errorf("%q:\n got %d %s close=%v retry=%q body=%q\nwant %d %s close=%v retry=%q body=%q", c,
				got.status, got.proto, got.close, got.retryAfter, got.body,
				resp.StatusCode, resp.Proto, resp.Close, resp.Header.Get("Retry-After"), want)
		}
		if got.close {
			continue // nothing follows a closing answer
		}
		if next, err := readRawAnswer(br, new(bytes.Buffer)); err != nil || next.status != 201 || string(next.body) != "next" {
			t.Errorf("%q: the next answer read as %+v, %v", c, next, err)
		}
	}
}

// TestRawAnswerRefusesWhatItCannotFrame: garbage, a truncated answer and an unframed kept-alive
// body are errors, and an answer cut inside its body says its head was read.
func TestRawAnswerRefusesWhatItCannotFrame(t *testing.T) {
	for _, tc := range []struct {
		in     string
		headed bool
	}{
		{"", false},
		{"garbage\r\n\r\n", false},
		{"HTTP/1.1 20 OK\r\n\r\n", false},
		{"HTTP/2.0 200 OK\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", false},
		{"HTTP/1.1 200 OK\r\n\r\nbody", true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", true},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", true},
		{"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 20<<10) + "\r\n\r\n", false},
	} {
		a, err := readRawAnswer(bufio.NewReaderSize(strings.NewReader(tc.in), 16<<10), new(bytes.Buffer))
		if err == nil || a.headed != tc.headed {
			t.Errorf("%.60q: got headed=%v err=%v, want an error with headed=%v", tc.in, a.headed, err, tc.headed)
		}
	}
}

// FuzzRawAnswer: whatever the bytes, no panic; and where both readers read a whole answer, the
// same status and body.
func FuzzRawAnswer(f *testing.F) {
	for _, c := range rawAnswerCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := readRawAnswer(bufio.NewReaderSize(bytes.NewReader(in), 16<<10), new(bytes.Buffer))
		if err != nil {
			return
		}
		resp, rerr := http.ReadResponse(bufio.NewReader(bytes.NewReader(in)), nil)
		if rerr != nil {
			return
		}
		want, berr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		if berr != nil || resp.Request != nil {
			return
		}
		if got.status != resp.StatusCode || !bytes.Equal(got.body, want) && len(resp.TransferEncoding) == 0 && resp.ContentLength >= 0 {
			t.Fatalf("%q: got %d %q, net/http %d %q", in, got.status, got.body, resp.StatusCode, want)
		}
	})
}

// TestAnswerMemoClassifiesEachAnswer: the memo returns the classifier's verdict for every answer,
// the same bytes again or not, and never a previous answer's order id for another body.
func TestAnswerMemoClassifiesEachAnswer(t *testing.T) {
	c, err := ClassifierFor(profile.Default())
	if err != nil {
		t.Fatal(err)
	}
	answers := []struct {
		status int
		body   string
	}{
		{409, `{"error":"SOLD_OUT","message":"item drop is sold out"}`},
		{409, `{"error":"SOLD_OUT","message":"item drop is sold out"}`},
		{202, `{"orderId":"o-1","status":"RESERVED"}`},
		{202, `{"orderId":"o-2","status":"RESERVED"}`},
		{202, `{"orderId":"o-2","status":"RESERVED"}`},
		{429, `{"error":"SOLD_OUT","message":"item drop is sold out"}`},
		{409, `{"error":"SOLD_OUT","message":"item drop is sold out"}`},
		{500, ``},
	}
	var m answerMemo
	for _, a := range answers {
		body := []byte(a.body) // the reader's buffer: overwritten by the next answer
		gotCode, gotID := m.classify(c, a.status, body)
		wantCode, wantID := c.Classify(a.status, []byte(a.body))
		if gotCode != wantCode || gotID != wantID {
			t.Errorf("%d %s: memo says %s %q, the classifier %s %q", a.status, a.body, gotCode, gotID, wantCode, wantID)
		}
		copy(body, bytes.Repeat([]byte("x"), len(body)))
	}
}

// TestAnswerMemoKeepsAnAnswerEachStatus: a sold-out answer between reserved ones is classified
// from the memo (a classifier that would say otherwise is not asked), and an answer of a status
// never seen (0 included) is not taken for an empty entry.
func TestAnswerMemoKeepsAnAnswerEachStatus(t *testing.T) {
	c, err := ClassifierFor(profile.Default())
	if err != nil {
		t.Fatal(err)
	}
	other, err := ParseClassifier([]byte("rules:\n  - {status: 299, outcome: RESERVED}\n")) // 410: CLIENT_ERROR
	if err != nil {
		t.Fatal(err)
	}
	var m answerMemo
	soldOut := []byte(`{"error":"SOLD_OUT","message":"item drop is sold out"}`)
	m.classify(c, 410, soldOut)
	for i := range 10 {
		if code, id := m.classify(c, 202, []byte(`{"orderId":"o-`+strconv.Itoa(i)+`","status":"PENDING"}`)); code != outcome.Reserved || id != "o-"+strconv.Itoa(i) {
			t.Fatalf("reserved answer %d: %s %q", i, code, id)
		}
		if code, _ := m.classify(other, 410, soldOut); code != outcome.SoldOut {
			t.Fatalf("the sold-out answer after reserved answer %d was classified again: %s", i, code)
		}
	}
	if code, _ := m.classify(c, 0, nil); code != ServerError {
		t.Errorf("status 0, no body: %s, want %s", code, ServerError)
	}
}

// BenchmarkAnswerMemo classifies a 10,000-unit burst's answers as one connection of 1,000 sees
// them, a fifth of its buyers reserved at random places among sold-out answers, with the memo
// of the last answer alone (the way before) and with one answer a status.
func BenchmarkAnswerMemo(b *testing.B) {
	c, err := ClassifierFor(profile.Default())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(37, 1))
	var answers []classified
	for i := range 50 {
		a := classified{status: 410, body: []byte(`{"error":"SOLD_OUT","message":"item drop is sold out"}` + "\n")}
		if rng.IntN(5) == 0 {
			a = classified{status: 202, body: []byte(`{"orderId":"019aeb1c-0000-7000-8000-0000000000` + strconv.Itoa(10+i) + `","status":"PENDING","expiresAt":"2026-12-05T17:04:05.678Z"}` + "\n")}
		}
		answers = append(answers, a)
	}
	b.Run("way=last-answer", func(b *testing.B) {
		for range b.N {
			var last classified
			for _, a := range answers {
				if !last.ok || a.status != last.status || !bytes.Equal(a.body, last.body) {
					last.outcome, last.orderID = c.Classify(a.status, a.body)
					last.ok, last.status, last.body = true, a.status, append(last.body[:0], a.body...)
				}
			}
		}
	})
	b.Run("way=an-answer-a-status", func(b *testing.B) {
		for range b.N {
			var m answerMemo
			for _, a := range answers {
				m.classify(c, a.status, a.body)
			}
		}
	})
}
