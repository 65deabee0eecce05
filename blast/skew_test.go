package blast_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
)

// TestSkewAgainstTheSalePage measures the bundled server's serverTime with a true clock and with
// one three seconds fast: the first passes --max-skew 1s, the second is refused.
func TestSkewAgainstTheSalePage(t *testing.T) {
	c := startCheckout(t, 1, 1)
	ctx := context.Background()
	s, err := blast.MeasureSkew(ctx, http.DefaultClient, c.base, c.sale.ID, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Source != "serverTime" || s.Check(time.Second) != nil {
		t.Errorf("same clock: %v, %v", s, s.Check(time.Second))
	}
	fast := func() time.Time { return time.Now().Add(3 * time.Second) }
	if s, err = blast.MeasureSkew(ctx, http.DefaultClient, c.base, c.sale.ID, fast); err != nil {
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
	s, err := blast.MeasureSkew(context.Background(), srv.Client(), srv.URL, "any", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Source, "Date") || s.Offset < 9*time.Second || s.Offset > 11*time.Second {
		t.Errorf("skew %v, want about +10s from the Date header", s)
	}
	if err := s.Check(time.Second); err == nil {
		t.Error("10s of skew passed")
	}
}
