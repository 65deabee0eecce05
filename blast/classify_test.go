package blast_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/outcome"
)

func TestDefaultClassification(t *testing.T) {
	c := blast.Default()
	for _, tc := range []struct {
		status int
		body   string
		want   outcome.Code
		order  string
	}{
		{202, `{"orderId":"0190-abc","status":"PENDING"}`, outcome.Reserved, "0190-abc"},
		{202, `{"status":"PENDING"}`, blast.ServerError, ""}, // a yes without an order is not a reservation
		{410, `{"error":"SOLD_OUT","message":"gone"}`, outcome.SoldOut, ""},
		{409, `{"error":"ALREADY_PURCHASED"}`, outcome.AlreadyPurchased, ""},
		{429, `{"error":"NOT_ADMITTED"}`, outcome.NotAdmitted, ""},
		{429, `{"error":"RATE_LIMITED"}`, outcome.RateLimited, ""},
		{425, `{"error":"NOT_STARTED"}`, outcome.NotStarted, ""},
		{503, `{"error":"PAUSED"}`, outcome.Paused, ""},
		{401, `{"error":"UNAUTHORIZED"}`, blast.ClientError, ""},
		{404, `not json`, blast.ClientError, ""},
		{500, `{"error":"INTERNAL"}`, blast.ServerError, ""},
		{503, `{"error":"ORDER_PIPELINE_UNAVAILABLE"}`, blast.ServerError, ""},
		{200, `<html>hello</html>`, blast.ServerError, ""},
		{302, ``, blast.ServerError, ""},
	} {
		got, order := c.Classify(tc.status, []byte(tc.body))
		if got != tc.want || order != tc.order {
			t.Errorf("%d %s: got %s %q, want %s %q", tc.status, tc.body, got, order, tc.want, tc.order)
		}
	}
}

func TestCustomClassification(t *testing.T) {
	c, err := blast.ParseClassifier([]byte(`
orderIdField: data.order.id
rules:
  - {status: 201, field: data.order.id, outcome: RESERVED}
  - {status: 200, match: "(?i)out of stock", outcome: SOLD_OUT}
  - {field: code, value: "42", outcome: ALREADY_PURCHASED}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status int
		body   string
		want   outcome.Code
		order  string
	}{
		{201, `{"data":{"order":{"id":"o-7"}}}`, outcome.Reserved, "o-7"},
		{201, `{"data":{"order":{}}}`, blast.ServerError, ""},
		{200, `Sorry, OUT OF STOCK`, outcome.SoldOut, ""},
		{400, `{"code":42}`, outcome.AlreadyPurchased, ""},
		{400, `{"code":43}`, blast.ClientError, ""},
	} {
		got, order := c.Classify(tc.status, []byte(tc.body))
		if got != tc.want || order != tc.order {
			t.Errorf("%d %s: got %s %q, want %s %q", tc.status, tc.body, got, order, tc.want, tc.order)
		}
	}
}

func TestClassificationFileErrors(t *testing.T) {
	for name, yaml := range map[string]string{
		"unknown outcome": `rules: [{status: 200, outcome: HAPPY}]`,
		"client outcome":  `rules: [{status: 200, outcome: TIMEOUT}]`,
		"no condition":    `rules: [{outcome: SOLD_OUT}]`,
		"value alone":     `rules: [{value: x, outcome: SOLD_OUT}]`,
		"bad regexp":      `rules: [{match: "(", outcome: SOLD_OUT}]`,
		"unknown key":     `rules: [{stauts: 410, outcome: SOLD_OUT}]`,
		"not yaml":        `rules: [`,
	} {
		if _, err := blast.ParseClassifier([]byte(yaml)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestExampleClassificationIsTheDefault keeps the shipped example and the embedded default one file.
func TestExampleClassificationIsTheDefault(t *testing.T) {
	example, err := os.ReadFile("../examples/classify.yaml")
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := os.ReadFile("classify.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(example, embedded) {
		t.Error("examples/classify.yaml and blast/classify.yaml differ: copy one over the other")
	}
	if _, err := blast.LoadClassifier("../examples/classify.yaml"); err != nil {
		t.Error(err)
	}
}

// FuzzClassify: any status and body get one of blast's outcomes, never a panic.
func FuzzClassify(f *testing.F) {
	f.Add(202, []byte(`{"orderId":"x"}`))
	f.Add(410, []byte(`{"error":"SOLD_OUT"}`))
	f.Add(200, []byte(`{"error":{"nested":[1,2]}}`))
	f.Add(-1, []byte("\xff\x00"))
	custom, err := blast.ParseClassifier([]byte(`
orderIdField: a.b
rules:
  - {field: a.b.c, outcome: RESERVED}
  - {match: "x+y", outcome: SOLD_OUT}
`))
	if err != nil {
		f.Fatal(err)
	}
	known := map[outcome.Code]bool{}
	for _, c := range blast.Outcomes() {
		known[c] = true
	}
	def := blast.Default()
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		for _, c := range []*blast.Classifier{def, custom} {
			if got, _ := c.Classify(status, body); !known[got] {
				t.Fatalf("%d %q: outcome %q", status, body, got)
			}
		}
	})
}
