package server

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
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
