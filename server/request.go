package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// Limits on what a purchase request may carry.
const (
	MaxIdemKeyLen   = 128
	MaxPurchaseBody = 1 << 10
)

// purchaseRequest is a purchase request once its path, headers and body are validated.
type purchaseRequest struct {
	SaleID, ItemID string
	IdemKey        string
}

// purchaseBody is the optional JSON body of a purchase. One order is one unit; a buyer allowed
// several units places several orders (each with its own Idempotency-Key).
type purchaseBody struct {
	Quantity *int `json:"quantity"`
}

// parsePurchase validates everything a purchase request carries except the bearer token. Every
// rejection is an *outcome.Error that names the field to fix.
func parsePurchase(saleID, itemID, idemKey string, body io.Reader) (purchaseRequest, error) {
	if !sale.ValidSlug(saleID) {
		return purchaseRequest{}, outcome.Errorf(outcome.InvalidRequest, "sale id must match [A-Za-z0-9_-]{1,64}")
	}
	if !sale.ValidSlug(itemID) {
		return purchaseRequest{}, outcome.Errorf(outcome.InvalidRequest, "item id must match [A-Za-z0-9_-]{1,64}")
	}
	if err := validIdemKey(idemKey); err != nil {
		return purchaseRequest{}, err
	}
	if err := parsePurchaseBody(body); err != nil {
		return purchaseRequest{}, err
	}
	return purchaseRequest{SaleID: saleID, ItemID: itemID, IdemKey: idemKey}, nil
}

func validIdemKey(k string) error {
	if k == "" {
		return outcome.Errorf(outcome.InvalidRequest, "Idempotency-Key header is required (a unique string per purchase attempt, e.g. a UUID)")
	}
	if len(k) > MaxIdemKeyLen {
		return outcome.Errorf(outcome.InvalidRequest, "Idempotency-Key is %d bytes; at most %d", len(k), MaxIdemKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return outcome.Errorf(outcome.InvalidRequest, "Idempotency-Key must be printable ASCII without spaces")
		}
	}
	return nil
}

func parsePurchaseBody(body io.Reader) error {
	if body == nil || body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(body, MaxPurchaseBody+1))
	if err != nil {
		return outcome.Errorf(outcome.InvalidRequest, "read body: %v", err)
	}
	if len(b) > MaxPurchaseBody {
		return outcome.Errorf(outcome.BodyTooLarge, "purchase body is larger than %d bytes", MaxPurchaseBody)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var pb purchaseBody
	if err := dec.Decode(&pb); err != nil {
		return outcome.Errorf(outcome.InvalidRequest, "body must be a JSON object such as {\"quantity\":1}: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return outcome.Errorf(outcome.InvalidRequest, "body must hold one JSON object")
	}
	if pb.Quantity != nil && *pb.Quantity != 1 {
		return outcome.Errorf(outcome.Unprocessable, "quantity must be 1: one order is one unit; place another order for another unit")
	}
	return nil
}
