package loadgen

import (
	"bytes"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// TestRawRequestWritesWhatNetHTTPWrites: for the shipped profiles and templates that stretch it
// (methods with and without a body, header names in any case, values to trim or that render
// empty, placeholders in the path and the query, a base with a slash), the template writes the
// very bytes net/http's Request.Write writes, or declines and leaves the buyer to it.
func TestRawRequestWritesWhatNetHTTPWrites(t *testing.T) {
	spring, err := profile.Load(filepath.Join("..", "profiles", "spring-article.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	variant := func(pu profile.Purchase) *profile.Profile {
		p := *profile.Default()
		p.Purchase = pu
		p.Purchase.Headers = maps.Clone(pu.Headers)
		return &p
	}
	cases := []struct {
		name       string
		prof       *profile.Profile
		wantDirect bool // the template, not net/http, writes these
	}{
		{"fsctl", profile.Default(), true},
		{"spring-article", spring, true},
		{"GET", variant(profile.Purchase{Method: "GET", URL: "/buy/${item}?u=${user}&n=${buyer}", Headers: map[string]string{"x-key": "${key}"}}), true},
		{"PUT with a body", variant(profile.Purchase{Method: "PUT", URL: "/s/${sale}/i/${item}", Body: `{"user":"${user}","n":${buyer}}`,
			Headers: map[string]string{"content-type": "application/json", "X-Pad": "  spaced ${user}\t", "X-Empty": "${token}"}}), true},
		{"DELETE without a body", variant(profile.Purchase{Method: "DELETE", URL: "/o/${key}", Headers: map[string]string{"authorization": "Bearer ${token}"}}), true},
		{"user in the path", variant(profile.Purchase{Method: "POST", URL: "/u/${user}/buy", Headers: map[string]string{"A": "1", "b": "2", "C-D": "3"}}), true},
		{"own User-Agent", variant(profile.Purchase{Method: "POST", URL: "/buy", Headers: map[string]string{"User-Agent": "shop-bot"}}), false},
		{"two names for one header", variant(profile.Purchase{Method: "POST", URL: "/buy", Headers: map[string]string{"x-a": "1", "X-A": "2"}}), false},
	}
	buyers := []profile.Buy{
		{Sale: "bf", Item: "console", User: "ann", Key: "ann-1-k", Token: "tok.en.x", Buyer: 0},
		{Sale: "bf", Item: "console", User: "blast-123456", Key: "blast-123456-1-abcdef", Token: "", Buyer: 123456},
		{Sale: "bf", Item: "console", User: "a b/c?d", Key: "k%2F", Token: "t", Buyer: 7},
	}
	for _, c := range cases {
		tmpl := newRawRequest(c.prof)
		for _, base := range []string{"http://127.0.0.1:18080", "http://shop.internal:8080/", "http://[::1]:8080", "http://shop.internal:/api"} {
			// net/http drops an empty port from the Host header: that base is left to it.
			wantDirect := c.wantDirect && !strings.HasSuffix(base, ":/api")
			var last rawURL
			direct := 0
			for _, b := range buyers {
				req, err := c.prof.PurchaseRequest(base, b)
				if err != nil {
					t.Fatal(err)
				}
				var want bytes.Buffer
				if err := req.Write(&want); err != nil {
					t.Fatal(err)
				}
				v := profile.Vars{}
				b.Fill(v)
				got, ok := tmpl.append(nil, base, v, &last)
				if !ok {
					continue
				}
				direct++
				if !bytes.Equal(got, want.Bytes()) || last.full != req.URL.String() {
					t.Errorf("%s, %s, buyer %q:\n got %q (%s)\nwant %q (%s)", c.name, base, b.User, got, last.full, want.Bytes(), req.URL)
				}
			}
			if wantDirect && direct < 2 || !wantDirect && direct > 0 {
				t.Errorf("%s, %s: the template wrote %d of %d buyers itself", c.name, base, direct, len(buyers))
			}
		}
	}
}

// FuzzRawRequest: whatever a buyer's values, the template writes net/http's bytes or declines.
func FuzzRawRequest(f *testing.F) {
	f.Add("ann", "ann-1-k", "tok.en", "bf", 1)
	f.Add("a b/c?d#e", "k%2F\t", " spaced ", "s%20", -3)
	p := *profile.Default()
	p.Purchase = profile.Purchase{Method: "POST", URL: "/s/${sale}/u/${user}?k=${key}",
		Body: `{"u":"${user}","n":${buyer}}`, Headers: map[string]string{"authorization": "Bearer ${token}", "X-Key": "${key}"}}
	tmpl := newRawRequest(&p)
	f.Fuzz(func(t *testing.T, user, key, token, sale string, n int) {
		b := profile.Buy{Sale: sale, Item: "i", User: user, Key: key, Token: token, Buyer: n}
		v := profile.Vars{}
		b.Fill(v)
		var last rawURL
		got, ok := tmpl.append(nil, "http://127.0.0.1:18080", v, &last)
		if !ok {
			return
		}
		req, err := p.PurchaseRequest("http://127.0.0.1:18080", b)
		if err != nil {
			t.Fatalf("the template wrote %q, net/http refused the request: %v", got, err)
		}
		var want bytes.Buffer
		if err := req.Write(&want); err != nil {
			t.Fatalf("the template wrote %q, net/http refused to write it: %v", got, err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("got %q\nwant %q", got, want.Bytes())
		}
	})
}
