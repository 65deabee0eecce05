package skew_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/platform/skew"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// TestSkewAgainstTheSalePage measures the bundled server's serverTime with a true clock and with
// one three seconds fast: the first passes --max-skew 1s, the second is refused.
func TestSkewAgainstTheSalePage(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 1})
	ctx := context.Background()
	url := c.Base + "/api/v1/sales/" + c.Sale.ID
	s, err := skew.Measure(ctx, http.DefaultClient, url, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Source != "serverTime" || s.Resolution != 0 || s.Check(time.Second) != nil {
		t.Errorf("same clock: %v, %v", s, s.Check(time.Second))
	}
	fast := func() time.Time { return time.Now().Add(3 * time.Second) }
	if s, err = skew.Measure(ctx, http.DefaultClient, url, fast); err != nil {
		t.Fatal(err)
	}
	if s.Offset < 2*time.Second || s.Offset > 4*time.Second {
		t.Errorf("offset %s, want about +3s", s.Offset)
	}
	if err := s.Check(time.Second); err == nil || !strings.Contains(err.Error(), "ahead of the server") {
		t.Errorf("a clock 3s fast passed: %v", err)
	}
}

// TestSkewFromTheDateHeader: a target without a sale page still dates its answers.
func TestSkewFromTheDateHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Date", time.Now().Add(-10*time.Second).UTC().Format(http.TimeFormat))
		http.NotFound(w, nil)
	}))
	defer srv.Close()
	s, err := skew.Measure(context.Background(), srv.Client(), srv.URL, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Source, "Date") || s.Resolution != time.Second || s.Offset < 9*time.Second || s.Offset > 11*time.Second {
		t.Errorf("skew %v, want about +10s from the Date header", s)
	}
	if err := s.Check(time.Second); err == nil {
		t.Error("10s of skew passed")
	}
}

// TestNeitherTimeNorDate: an answer that carries no time is an error naming the URL.
func TestNeitherTimeNorDate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Date"] = nil // net/http adds one unless told not to
	}))
	defer srv.Close()
	_, err := skew.Measure(context.Background(), srv.Client(), srv.URL+"/x", time.Now)
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/x gave neither") {
		t.Fatalf("got %v", err)
	}
}

func TestBetweenTakesTheMiddleOfTheRoundTrip(t *testing.T) {
	sent := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := skew.Between(sent, sent.Add(10*time.Millisecond), sent.Add(2*time.Millisecond))
	if s.RTT != 10*time.Millisecond || s.Offset != 3*time.Millisecond || s.Bound() != 5*time.Millisecond {
		t.Fatalf("got %+v, bound %s", s, s.Bound())
	}
}

// TestLeast: a clock read to the second is skewed only by what lies outside its second.
func TestLeast(t *testing.T) {
	for _, tc := range []struct {
		offset, resolution, want time.Duration
	}{
		{300 * time.Millisecond, 0, 300 * time.Millisecond},
		{-300 * time.Millisecond, 0, -300 * time.Millisecond},
		{400 * time.Millisecond, time.Second, 0},
		{-500 * time.Millisecond, time.Second, 0},
		{1200 * time.Millisecond, time.Second, 700 * time.Millisecond},
		{-1200 * time.Millisecond, time.Second, -700 * time.Millisecond},
	} {
		s := skew.Skew{Offset: tc.offset, Resolution: tc.resolution, RTT: 2 * time.Millisecond}
		if got := s.Least(); got != tc.want {
			t.Errorf("offset %s at resolution %s: least %s, want %s", tc.offset, tc.resolution, got, tc.want)
		}
		if want := time.Millisecond + tc.resolution/2; s.Bound() != want {
			t.Errorf("bound %s, want %s", s.Bound(), want)
		}
	}
}

func TestBestKeepsTheShortestRoundTrip(t *testing.T) {
	rtts := []time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}
	i := 0
	s, err := skew.Best(3, func() (skew.Skew, error) {
		s := skew.Skew{RTT: rtts[i], Offset: time.Duration(i)}
		i++
		return s, nil
	})
	if err != nil || s.RTT != time.Millisecond || s.Offset != 1 {
		t.Fatalf("got %+v, %v", s, err)
	}
	boom := errors.New("boom")
	calls := 0
	if _, err := skew.Best(3, func() (skew.Skew, error) { calls++; return skew.Skew{}, boom }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("a failed reading: %v after %d call(s)", err, calls)
	}
}

// TestCheckJudgesTheLeastOffset: a clock read to the second is refused only for what it shows
// beyond the half second it cannot; one read to the millisecond, for its whole offset.
func TestCheckJudgesTheLeastOffset(t *testing.T) {
	limit := 250 * time.Millisecond
	for _, tc := range []struct {
		s  skew.Skew
		ok bool
	}{
		{skew.Skew{Offset: 369 * time.Millisecond, Resolution: time.Second}, true},
		{skew.Skew{Offset: -700 * time.Millisecond, Resolution: time.Second}, true},
		{skew.Skew{Offset: 900 * time.Millisecond, Resolution: time.Second}, false},
		{skew.Skew{Offset: 300 * time.Millisecond}, false},
		{skew.Skew{Offset: -200 * time.Millisecond}, true},
	} {
		if err := tc.s.Check(limit); (err == nil) != tc.ok {
			t.Errorf("offset %s, resolution %s: %v, want ok=%v", tc.s.Offset, tc.s.Resolution, err, tc.ok)
		}
	}
}
