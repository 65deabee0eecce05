package server

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// answerAgrees checks that appendAnswer writes v byte for byte as json.Encoder.Encode does, or
// leaves it to encoding/json; plain says whether it must have written it itself.
func answerAgrees(t *testing.T, v any, plain bool) {
	t.Helper()
	var want bytes.Buffer
	wantErr := json.NewEncoder(&want).Encode(v)
	got, ok := appendAnswer(nil, v)
	if ok && (wantErr != nil || string(got) != want.String()) {
		t.Fatalf("%#v: appendAnswer wrote %q, encoding/json %q (%v)", v, got, want.String(), wantErr)
	}
	if plain && !ok {
		t.Fatalf("%#v: left to encoding/json", v)
	}
}

// TestAppendAnswer: the purchase's usual answers are written without encoding/json, as it writes
// them; anything that needs escaping is left to it.
func TestAppendAnswer(t *testing.T) {
	exp := time.Date(2026, 12, 5, 3, 4, 5, 678000000, time.UTC)
	answerAgrees(t, errorBody{Error: outcome.SoldOut, Message: "item gone is sold out"}, true)
	answerAgrees(t, reservedBody{OrderID: "019aeb1c-0000-7000-8000-000000000000", Status: "PENDING", ExpiresAt: exp}, true)
	answerAgrees(t, reservedBody{OrderID: "o", Status: "PENDING", ExpiresAt: exp.In(time.FixedZone("x", 3600))}, true)
	for _, msg := range []string{`a "quoted" word`, `back\slash`, "<b>", "a & b", "tab\there", "caf\u00e9", "\xff", "\u2028", "del\x7f"} {
		answerAgrees(t, errorBody{Error: outcome.Unavailable, Message: msg}, false)
	}
	answerAgrees(t, reservedBody{OrderID: "o", Status: "PENDING", ExpiresAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, false)
	answerAgrees(t, map[string]string{"status": "ok"}, false)
}

// FuzzAppendAnswer: any answer appendAnswer writes, it writes as encoding/json does.
func FuzzAppendAnswer(f *testing.F) {
	f.Add("SOLD_OUT", "item gone is sold out", "019aeb1c-0000-7000-8000-000000000000", "PENDING", int64(1796444246), int64(678000000))
	f.Add("X", `"<&>"`, "o", "\\", int64(-62135596800), int64(0))
	f.Add("", "", "", "", int64(253402300800), int64(1))
	f.Fuzz(func(t *testing.T, code, msg, order, status string, sec, nsec int64) {
		answerAgrees(t, errorBody{Error: outcome.Code(code), Message: msg}, false)
		answerAgrees(t, reservedBody{OrderID: order, Status: status, ExpiresAt: time.Unix(sec, nsec).UTC()}, false)
	})
}
