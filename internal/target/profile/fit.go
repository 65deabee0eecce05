package profile

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
)

// Fit asks whether a profile fits the live target, one piece at a time. Each piece takes what it
// reads (the profile's DB, its Stocks, an HTTP client, the brokers) and returns findings, one per
// profile field tried: the field is the finding's check. `fsctl profile check` runs every piece;
// preflight's profile group runs the templates and the queries, since its own groups read the
// keys, the servers and the order log.
type Fit struct {
	P    *Profile
	Sale string
	// Secret replaces an hs256 profile's secret (as Minter takes it).
	Secret string
	// Now is the clock the sample token is minted at; nil means time.Now.
	Now func() time.Time
}

// probeUser is the buyer the pieces mint, render and query for: nobody real, so its orders are
// none, and nothing is ever bought.
const probeUser = "fsctl-profile-check"

// fix says where an operator corrects one field.
func (f Fit) fix(field string) string {
	return fmt.Sprintf("correct %s in the profile (%s) for this target", field, f.P.Source())
}

func (f Fit) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}

func found(check string, status finding.Status, detail, fix string) finding.Finding {
	return finding.Finding{Check: check, Status: status, Detail: detail, Fix: fix}
}

// Templates mints the probe buyer's token, then renders its purchase of the first item under base
// (never sent) and that item's stock key. No item renders a placeholder; an empty base a
// placeholder host (only the path is shown).
func (f Fit) Templates(base string, items []string) []finding.Finding {
	token, tf := f.token()
	item := "ITEM"
	if len(items) > 0 {
		item = items[0]
	}
	if base == "" {
		base = "http://TARGET"
	}
	out := []finding.Finding{tf, f.purchase(base, item, token)}
	if f.P.Keys(f.Sale, item, 1)[0].Stock == "" {
		out = append(out, found("redis.stock", finding.Fail, fmt.Sprintf("renders no key for sale %q, item %q", f.Sale, item), f.fix("redis.stock")))
	}
	return out
}

// token mints a token for the probe buyer, or for a token file's first buyer. A missing HS256
// secret is a warning: the profile may be right, and only the operator's environment lacks it.
func (f Fit) token() (string, finding.Finding) {
	p := f.P
	m, err := p.Minter(f.Secret)
	switch {
	case err != nil && p.Token.Type == TokenHS256 && p.Token.SecretEnv == "":
		return "TOKEN", found("token", finding.Warn, "no token: "+err.Error(), "set token.secretEnv (or token.secret) to the target's HS256 secret")
	case err != nil && p.Token.Type == TokenHS256:
		return "TOKEN", found("token", finding.Warn, "no token: "+err.Error(), "set $"+p.Token.SecretEnv+" to the target's HS256 secret before a blast")
	case err != nil:
		return "TOKEN", found("token", finding.Fail, "no token: "+err.Error(), "correct the token section of the profile ("+p.Source()+")")
	}
	user, check := probeUser, "token"
	if users := m.Users(); len(users) > 0 {
		user, check = users[0], "token.file"
	}
	tok, err := m.Mint(user, f.Sale, f.now(), p.TokenTTL())
	switch {
	case err != nil:
		return "TOKEN", found(check, finding.Fail, "minting a token: "+err.Error(), f.fix("token.claims"))
	case check == "token.file":
		return tok, found(check, finding.Pass, fmt.Sprintf("%d buyers' tokens", len(m.Users())), "")
	}
	return tok, found(check, finding.Pass, fmt.Sprintf("%s token for %s (%d bytes)", p.Token.Type, user, len(tok)), "")
}

// purchase renders the probe buyer's purchase request; a JSON Content-Type must carry a JSON body.
func (f Fit) purchase(base, item, token string) finding.Finding {
	req, err := f.P.PurchaseRequest(base, Buy{Sale: f.Sale, Item: item, User: probeUser, Key: "fsctl-check-1", Token: token})
	if err != nil {
		return found("purchase", finding.Fail, err.Error(), f.fix("purchase.url"))
	}
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body) // a bytes.Reader: it cannot fail
	}
	if strings.Contains(req.Header.Get("Content-Type"), "json") && len(body) > 0 && !json.Valid(body) {
		return found("purchase.body", finding.Fail, fmt.Sprintf("Content-Type is JSON but the rendered body is not: %s", body), f.fix("purchase.body"))
	}
	return found("purchase", finding.Pass, fmt.Sprintf("%s %s; headers %s; %d-byte body (rendered, never sent)",
		req.Method, req.URL.RequestURI(), strings.Join(sortedKeys(req.Header), ", "), len(body)), "")
}
