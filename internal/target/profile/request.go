package profile

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Buy is one buyer's purchase: the values of the request template's placeholders.
type Buy struct {
	Sale, Item, User, Key, Token string
	// Buyer is the buyer's number in the burst.
	Buyer int
}

func (b Buy) vars() Vars {
	v := make(Vars, 6)
	b.Fill(v)
	return v
}

// Fill sets the template placeholders' values of this buyer in v: a caller that renders buyers by
// the hundred thousand reuses one map.
func (b Buy) Fill(v Vars) {
	v["sale"], v["item"], v["user"], v["key"], v["token"], v["buyer"] = b.Sale, b.Item, b.User, b.Key, b.Token, strconv.Itoa(b.Buyer)
}

// PurchaseURL renders the purchase URL under base (the target's base URL).
func (p *Profile) PurchaseURL(base string, b Buy) string { return p.purchaseURL(base, b.vars()) }

func (p *Profile) purchaseURL(base string, v Vars) string {
	u := Render(p.Purchase.URL, v)
	if strings.HasPrefix(u, "/") {
		return strings.TrimRight(base, "/") + u
	}
	return u
}

// PurchaseRequest builds a buyer's purchase request. Its body can be sent again: GetBody is set,
// so retries and replays resend the same bytes.
func (p *Profile) PurchaseRequest(base string, b Buy) (*http.Request, error) {
	vars := b.vars() // once: buyers are prepared by the ten thousand
	var body io.Reader
	if p.Purchase.Body != "" {
		body = bytes.NewReader([]byte(Render(p.Purchase.Body, vars)))
	}
	req, err := http.NewRequest(p.Purchase.Method, p.purchaseURL(base, vars), body)
	if err != nil {
		return nil, fmt.Errorf("purchase.url: %w", err)
	}
	for name, v := range p.Purchase.Headers {
		if v = Render(v, vars); v != "" {
			req.Header.Set(name, v)
		}
	}
	return req, nil
}

// Endpoint renders one of the http paths under base; "" when the profile does not have it.
func (p *Profile) Endpoint(base, path, sale string) string {
	return Route(base, path, Vars{"sale": sale})
}

// Route renders one of the http paths under base with the values v (${sale}, ${item},
// ${order}); "" when the path is not declared.
func Route(base, path string, v Vars) string {
	if path == "" {
		return ""
	}
	return string(AppendRoute(nil, base, path, v))
}

// AppendRoute appends Route(base, path, v) to dst (nothing for an undeclared path): Route without
// a string of its own, for a caller that renders buyers' URLs into a buffer it reuses.
func AppendRoute(dst []byte, base, path string, v Vars) []byte {
	if path == "" {
		return dst
	}
	return AppendRender(append(dst, strings.TrimRight(base, "/")...), path, v)
}
