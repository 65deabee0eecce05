package fake

import (
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// valid restates the charge rules independently of parseCharge.
func valid(r chargeRequest) bool {
	if n := len(r.Key); n < 1 || n > 128 {
		return false
	}
	for _, c := range r.Key {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	if r.AmountCents < 0 || len(r.Token) < 1 || len(r.Token) > 256 || !utf8.ValidString(r.Token) {
		return false
	}
	for _, c := range r.Token {
		if unicode.IsControl(c) {
			return false
		}
	}
	if len(r.Currency) != 3 || strings.ToUpper(r.Currency) != r.Currency {
		return false
	}
	for _, c := range r.Currency {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// FuzzChargeRequest: parsing never panics, accepts only valid charges, and the handler answers 200
// exactly for what parses (tok_error aside) and 400 for the rest.
func FuzzChargeRequest(f *testing.F) {
	for _, seed := range []string{
		chargeBody("0190f3a2-7c1e-7cc1-9a53-4bd6f4b5c6e1", "tok_ok"),
		chargeBody("k", "tok_decline"),
		chargeBody("k", "tok_error"),
		`{"idempotencyKey":"k","amountCents":-1,"currency":"EUR","token":"t"}`,
		`{"idempotencyKey":"k","amountCents":9223372036854775807,"currency":"usd","token":"t"}`,
		`{"idempotencyKey":"k","amountCents":1e3,"currency":"EUR","token":"t"}`,
		`{"IDEMPOTENCYKEY":"k","AMOUNTCENTS":1,"CURRENCY":"EUR","TOKEN":"t","x":1}`,
		`{"idempotencyKey":"k\u00e9","amountCents":1,"currency":"EUR","token":"\u0007"}`,
		`{}`, `null`, `[1,2]`, `"`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseCharge(body)
		if err == nil && !valid(req) {
			t.Fatalf("accepted an invalid charge %+v from %q", req, body)
		}
		p := New(Config{}, nil)
		rec := httptest.NewRecorder()
		p.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/charges", strings.NewReader(string(body))))
		want := 400
		if err == nil && len(body) <= maxBody { // the handler reads no more than maxBody
			want = 200
			if req.Token == tokError {
				want = 503
			}
		}
		if rec.Code != want {
			t.Fatalf("answered %d to %q, want %d (parse error %v)", rec.Code, body, want, err)
		}
	})
}
