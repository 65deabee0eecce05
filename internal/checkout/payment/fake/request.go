package fake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// chargeRequest is a validated POST /v1/charges body.
type chargeRequest struct {
	Key         string
	AmountCents int64
	Currency    string // upper case
	Token       string
}

// chargeWire is the body as sent; pointers tell a missing field from a zero one, so a misspelt
// "amount" is refused instead of charging 0.
type chargeWire struct {
	IdempotencyKey *string `json:"idempotencyKey"`
	AmountCents    *int64  `json:"amountCents"`
	Currency       *string `json:"currency"`
	Token          *string `json:"token"`
}

// parseCharge decodes and validates a charge body.
func parseCharge(body []byte) (chargeRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var w chargeWire
	if err := dec.Decode(&w); err != nil {
		return chargeRequest{}, fmt.Errorf("body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return chargeRequest{}, errors.New("body: data after the JSON object")
	}
	switch {
	case w.IdempotencyKey == nil:
		return chargeRequest{}, errors.New("idempotencyKey is missing")
	case w.AmountCents == nil:
		return chargeRequest{}, errors.New("amountCents is missing")
	case w.Currency == nil:
		return chargeRequest{}, errors.New("currency is missing")
	case w.Token == nil:
		return chargeRequest{}, errors.New("token is missing")
	}
	if err := checkKey(*w.IdempotencyKey); err != nil {
		return chargeRequest{}, err
	}
	if *w.AmountCents < 0 {
		return chargeRequest{}, fmt.Errorf("amountCents %d: must not be negative", *w.AmountCents)
	}
	if !isCurrency(*w.Currency) {
		return chargeRequest{}, fmt.Errorf("currency %q: want three letters such as EUR", *w.Currency)
	}
	if err := checkToken(*w.Token); err != nil {
		return chargeRequest{}, err
	}
	return chargeRequest{
		Key: *w.IdempotencyKey, AmountCents: *w.AmountCents, Currency: strings.ToUpper(*w.Currency), Token: *w.Token,
	}, nil
}

// checkKey accepts 1–128 visible ASCII characters: keys travel in URL paths and logs, so no spaces
// or control characters.
func checkKey(k string) error {
	if len(k) < 1 || len(k) > 128 {
		return fmt.Errorf("idempotency key: %d characters, want 1..128", len(k))
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return fmt.Errorf("idempotency key %q: only visible ASCII characters", k)
		}
	}
	return nil
}

// checkToken accepts 1–256 bytes of UTF-8 text without control characters.
func checkToken(t string) error {
	if len(t) < 1 || len(t) > 256 {
		return fmt.Errorf("token: %d bytes, want 1..256", len(t))
	}
	if !utf8.ValidString(t) || strings.ContainsFunc(t, unicode.IsControl) {
		return errors.New("token: must be text without control characters")
	}
	return nil
}

func isCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if b := c[i] | 0x20; b < 'a' || b > 'z' {
			return false
		}
	}
	return true
}
