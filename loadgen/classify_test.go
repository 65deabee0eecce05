package loadgen_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/platform/yamlfield"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// bundledRules is the bundled server's classification: the classify section of its profile,
// the one place its rules are written.
func bundledRules(t testing.TB) *loadgen.Classifier {
	c, err := loadgen.ClassifierFor(profile.Default())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// answer is a purchase answer and the outcome and order id it must be classified as.
type answer struct {
	status int
	body   string
	want   outcome.Code
	order  string
}

func expectClassified(t *testing.T, c *loadgen.Classifier, answers []answer) {
	t.Helper()
	for _, a := range answers {
		if got, order := c.Classify(a.status, []byte(a.body)); got != a.want || order != a.order {
			t.Errorf("%d %s: got %s %q, want %s %q", a.status, a.body, got, order, a.want, a.order)
		}
	}
}

func TestBundledClassification(t *testing.T) {
	c := bundledRules(t)
	expectClassified(t, c, []answer{
		{202, `{"orderId":"0190-abc","status":"PENDING"}`, outcome.Reserved, "0190-abc"},
		{202, `{"status":"PENDING"}`, loadgen.ServerError, ""}, // a yes without an order is not a reservation
		{410, `{"error":"SOLD_OUT","message":"gone"}`, outcome.SoldOut, ""},
		{409, `{"error":"ALREADY_PURCHASED"}`, outcome.AlreadyPurchased, ""},
		{429, `{"error":"NOT_ADMITTED"}`, outcome.NotAdmitted, ""},
		{429, `{"error":"RATE_LIMITED"}`, outcome.RateLimited, ""},
		{425, `{"error":"NOT_STARTED"}`, outcome.NotStarted, ""},
		{503, `{"error":"PAUSED"}`, outcome.Paused, ""},
		{401, `{"error":"UNAUTHORIZED"}`, loadgen.ClientError, ""},
		{404, `not json`, loadgen.ClientError, ""},
		{500, `{"error":"INTERNAL"}`, loadgen.ServerError, ""},
		{503, `{"error":"ORDER_PIPELINE_UNAVAILABLE"}`, loadgen.ServerError, ""},
		{200, `<html>hello</html>`, loadgen.ServerError, ""},
		{302, ``, loadgen.ServerError, ""},
	})
}

func TestCustomClassification(t *testing.T) {
	c, err := loadgen.ParseClassifier([]byte(`
orderIdField: data.order.id
rules:
  - {status: 201, field: data.order.id, outcome: RESERVED}
  - {status: 200, match: "(?i)out of stock", outcome: SOLD_OUT}
  - {field: code, value: "42", outcome: ALREADY_PURCHASED}
`))
	if err != nil {
		t.Fatal(err)
	}
	expectClassified(t, c, []answer{
		{201, `{"data":{"order":{"id":"o-7"}}}`, outcome.Reserved, "o-7"},
		{201, `{"data":{"order":{}}}`, loadgen.ServerError, ""},
		{200, `Sorry, OUT OF STOCK`, outcome.SoldOut, ""},
		{400, `{"code":42}`, outcome.AlreadyPurchased, ""},
		{400, `{"code":43}`, loadgen.ClientError, ""},
	})
}

func TestClassificationFileErrors(t *testing.T) {
	for name, c := range map[string]struct{ yaml, want string }{
		"unknown outcome": {`rules: [{status: 200, outcome: HAPPY}]`, `line 1: rules[0].outcome: "HAPPY" is not one of`},
		"client outcome":  {"rules:\n  - {status: 200, outcome: RESERVED}\n  - {status: 200, outcome: TIMEOUT}", `line 3: rules[1].outcome: "TIMEOUT"`},
		"no condition":    {`rules: [{outcome: SOLD_OUT}]`, "rules[0]: give at least one of status, field, match"},
		"value alone":     {`rules: [{status: 200, value: x, outcome: SOLD_OUT}]`, "rules[0].value: value without field"},
		"bad regexp":      {`rules: [{match: "(", outcome: SOLD_OUT}]`, "rules[0].match: error parsing regexp"},
		"unknown key":     {"rules:\n  - stauts: 410\n    outcome: SOLD_OUT\n", "line 2: rules[0].stauts: unknown key (did you mean status? known: status, field, value, match, outcome)"},
		"status in words": {"rules:\n  - status: gone\n    outcome: SOLD_OUT\n", `line 2: rules[0].status: "gone" is not a whole number`},
		"not yaml":        {`rules: [`, "line 1: did not find expected node content"},
		"empty":           {"", "the file is empty"},
	} {
		_, err := loadgen.ParseClassifier([]byte(c.yaml))
		var fe *yamlfield.Error
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a *yamlfield.Error containing %q", name, err, c.want)
		}
	}
}

// TestProfileClassifyNamesItsLine: a rule of a profile's classify section is named by its path
// and line in the profile's file.
func TestProfileClassifyNamesItsLine(t *testing.T) {
	p, err := profile.Parse([]byte(`name: shop
purchase: {url: "/buy/${item}"}
token: {type: none}
classify:
  rules:
    - {status: 202, outcome: RESERVED}
    - {status: 410, outcome: GONE}
redis: {stock: "stock:${item}"}
sql:
  items: SELECT id FROM items
  item: SELECT quantity, sold FROM items WHERE id = @item
  live: SELECT count(*) FROM orders WHERE item_id = @item
  userOrders: SELECT id, status FROM orders WHERE item_id = @item AND user_id = @user
`), "shop.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = loadgen.ClassifierFor(p)
	if err == nil || !strings.HasPrefix(err.Error(), `shop.yaml: line 7: classify.rules[1].outcome: "GONE" is not one of`) {
		t.Fatalf("got %v", err)
	}
}

// TestExampleClassification: the shipped template for another checkout parses and classifies
// the answers its comment describes.
func TestExampleClassification(t *testing.T) {
	c, err := loadgen.LoadClassifier("../examples/classify.yaml")
	if err != nil {
		t.Fatal(err)
	}
	expectClassified(t, c, []answer{
		{201, `{"data":{"order":{"id":"o-9"}}}`, outcome.Reserved, "o-9"},
		{409, `{"code":"OUT_OF_STOCK"}`, outcome.SoldOut, ""},
		{409, `{"code":"LIMIT_REACHED"}`, outcome.AlreadyPurchased, ""},
		{429, ``, outcome.RateLimited, ""},
		{403, `<html>The sale is not open yet</html>`, outcome.NotStarted, ""},
		{503, `<html>Down for maintenance</html>`, outcome.Paused, ""},
		{403, `<html>Forbidden</html>`, loadgen.ClientError, ""},
	})
}

// FuzzClassify: any status and body get one of the classifier's outcomes, never a panic.
func FuzzClassify(f *testing.F) {
	f.Add(202, []byte(`{"orderId":"x"}`))
	f.Add(410, []byte(`{"error":"SOLD_OUT"}`))
	f.Add(200, []byte(`{"error":{"nested":[1,2]}}`))
	f.Add(-1, []byte("\xff\x00"))
	custom, err := loadgen.ParseClassifier([]byte(`
orderIdField: a.b
rules:
  - {field: a.b.c, outcome: RESERVED}
  - {match: "x+y", outcome: SOLD_OUT}
`))
	if err != nil {
		f.Fatal(err)
	}
	known := map[outcome.Code]bool{}
	for _, c := range loadgen.Outcomes() {
		known[c] = true
	}
	def := bundledRules(f)
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		for _, c := range []*loadgen.Classifier{def, custom} {
			if got, _ := c.Classify(status, body); !known[got] {
				t.Fatalf("%d %q: outcome %q", status, body, got)
			}
		}
	})
}
