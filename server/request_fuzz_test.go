package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// FuzzParsePurchase feeds arbitrary path values, keys and bodies to the purchase parser: it must
// never panic, every rejection must be a client error (4xx) with a message, and everything it
// accepts must satisfy the identifier rules.
func FuzzParsePurchase(f *testing.F) {
	f.Add("black-friday", "console", "k-1", "")
	f.Add("s", "i", "k", `{"quantity":1}`)
	f.Add("s", "i", "k", `{"quantity":2}`)
	f.Add("s/../x", "i", "", `{"quantity":`)
	f.Add(strings.Repeat("a", 65), "i", strings.Repeat("k", 200), `{} {}`)
	f.Add("s", "i", "k\x00", `{"userId":"x"}`)
	f.Add("s", "i", "k", " \n ")
	f.Fuzz(func(t *testing.T, saleID, itemID, key, body string) {
		req, err := parsePurchase(saleID, itemID, key, strings.NewReader(body))
		if err != nil {
			var oe *outcome.Error
			if !errors.As(err, &oe) {
				t.Fatalf("rejection %v is not an *outcome.Error", err)
			}
			if st := outcome.HTTPStatus(oe.Code); st < 400 || st >= 500 {
				t.Fatalf("rejection %v maps to status %d, want 4xx", err, st)
			}
			if oe.Message == "" {
				t.Fatalf("rejection %v has no message", err)
			}
			return
		}
		if !sale.ValidSlug(req.SaleID) || !sale.ValidSlug(req.ItemID) {
			t.Fatalf("accepted invalid ids %q/%q", req.SaleID, req.ItemID)
		}
		if req.SaleID != saleID || req.ItemID != itemID || req.IdemKey != key {
			t.Fatalf("parser changed the request: %+v", req)
		}
		if len(key) == 0 || len(key) > MaxIdemKeyLen || strings.ContainsAny(key, " \t\r\n") {
			t.Fatalf("accepted idempotency key %q", key)
		}
		if len(body) > MaxPurchaseBody {
			t.Fatalf("accepted a %d-byte body", len(body))
		}
	})
}

func TestParsePurchaseBody(t *testing.T) {
	tests := []struct {
		body string
		code outcome.Code
	}{
		{"", ""},
		{"   ", ""},
		{"{}", ""},
		{`{"quantity":1}`, ""},
		{`{"quantity":0}`, outcome.Unprocessable},
		{`{"quantity":"1"}`, outcome.InvalidRequest},
		{`{"qty":1}`, outcome.InvalidRequest},
		{`[1]`, outcome.InvalidRequest},
		{`{}x`, outcome.InvalidRequest},
		{strings.Repeat(" ", MaxPurchaseBody+1), outcome.BodyTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			_, err := parsePurchase("s", "i", "k", strings.NewReader(tc.body))
			if tc.code == "" && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if tc.code != "" && outcome.CodeOf(err) != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
		})
	}
}
