package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/contract/finding"
)

// fitLine finds the line of one field; the test fails without one.
func fitLine(t *testing.T, fs []finding.Finding, check string) finding.Finding {
	t.Helper()
	for _, f := range fs {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s line in %+v", check, fs)
	return finding.Finding{}
}

func TestFitToken(t *testing.T) {
	f := Fit{P: Default(), Sale: "bf", Secret: "a-secret-of-more-than-16-bytes"}
	if l := fitLine(t, f.Templates("", []string{"hot"}), "token"); l.Status != finding.Pass || !strings.HasPrefix(l.Detail, "hs256 token for fsctl-profile-check (") {
		t.Fatalf("minted: %+v", l)
	}

	// A missing HS256 secret is the operator's environment, not the profile: a warning naming
	// the variable (or the field, when the profile names none).
	t.Setenv("FSCTL_JWT_SECRET", "")
	f.Secret = ""
	if l := fitLine(t, f.Templates("", nil), "token"); l.Status != finding.Warn || !strings.Contains(l.Fix, "set $FSCTL_JWT_SECRET") {
		t.Fatalf("no secret: %+v", l)
	}
	f.P = Default()
	f.P.Token.SecretEnv = ""
	if l := fitLine(t, f.Templates("", nil), "token"); l.Status != finding.Warn || !strings.HasPrefix(l.Fix, "set token.secretEnv") {
		t.Fatalf("no secretEnv: %+v", l)
	}

	// Any other token section that cannot mint is the profile's to correct.
	f.P = Default()
	f.P.Token = Token{Type: TokenRS256, KeyFile: filepath.Join(t.TempDir(), "missing.pem")}
	if l := fitLine(t, f.Templates("", nil), "token"); l.Status != finding.Fail || l.Fix != "correct the token section of the profile (built-in fsctl.yaml)" {
		t.Fatalf("no key file: %+v", l)
	}

	// A token file serves its own buyers: the line counts them.
	tokens := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(tokens, []byte("ann tok-a\nbob tok-b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.P.Token = Token{Type: TokenFile, File: tokens}
	if l := fitLine(t, f.Templates("", nil), "token.file"); l.Status != finding.Pass || l.Detail != "2 buyers' tokens" {
		t.Fatalf("token file: %+v", l)
	}
}

func TestFitPurchase(t *testing.T) {
	f := Fit{P: Default(), Sale: "bf", Secret: "a-secret-of-more-than-16-bytes"}
	l := fitLine(t, f.Templates("http://shop:8080", []string{"hot"}), "purchase")
	if l.Status != finding.Pass || !strings.HasPrefix(l.Detail, "POST /api/v1/sales/bf/items/hot/purchase; headers Authorization, Idempotency-Key; 0-byte body") {
		t.Fatalf("purchase: %+v", l)
	}
	f.P.Purchase.Headers = map[string]string{"Content-Type": "application/json"}
	f.P.Purchase.Body = `{"item": ${item}}`
	if l := fitLine(t, f.Templates("", []string{"hot"}), "purchase.body"); l.Status != finding.Fail || !strings.Contains(l.Fix, "correct purchase.body in the profile") {
		t.Fatalf("a body that is not JSON: %+v", l)
	}
	// A stock key that renders empty names redis.stock.
	f.P.Redis.Stock = "${sale}"
	f.Sale = ""
	if l := fitLine(t, f.Templates("", []string{"hot"}), "redis.stock"); l.Status != finding.Fail {
		t.Fatalf("empty stock key: %+v", l)
	}
}

func TestFitItems(t *testing.T) {
	f := Fit{P: Default(), Sale: "bf"}
	items, l := f.Items([]string{"a", "b", "c", "d", "e", "f", "g"}, nil, nil)
	if len(items) != 7 || l.Status != finding.Pass || l.Detail != "7 item(s): a, b, c, d, e and 2 more" {
		t.Fatalf("listed: %v %+v", items, l)
	}
	items, l = f.Items([]string{"a", "b"}, nil, []string{"b"})
	if len(items) != 1 || l.Detail != "2 item(s): a, b; checking b" {
		t.Fatalf("given: %v %+v", items, l)
	}
	// A failed query names the field to correct; an empty listing asks about the sale first.
	_, l = f.Items(nil, &QueryError{Query: "sql.items", Err: errors.New("boom")}, nil)
	if l.Status != finding.Fail || l.Fix != "correct sql.items in the profile (built-in fsctl.yaml) for this target" {
		t.Fatalf("query error: %+v", l)
	}
	if _, l = f.Items(nil, errors.New("sql.items returned no item"), nil); !strings.HasPrefix(l.Fix, "is --sale right? else correct sql.items") {
		t.Fatalf("no item: %+v", l)
	}
}

func TestFitProblemWording(t *testing.T) {
	f := Fit{P: Default(), Sale: "bf"}
	for _, c := range []struct {
		pr                Problem
		status            finding.Status
		detailPrefix, fix string
	}{
		{Problem{Field: "sql.live", Query: true, Err: &QueryError{Query: "sql.live", Err: errors.New("relation")}}, finding.Fail,
			"item hot: query sql.live: relation", "correct sql.live in the profile (built-in fsctl.yaml) for this target"},
		{Problem{Field: "sql.item", Query: true, Err: errors.Join(ErrNoItem, errors.New("item hot: no row"))}, finding.Fail,
			"no such item", "is the item id right? else correct sql.item"},
		{Problem{Field: "sql.liveBuyers", Warn: true, Err: errors.New("counts 2")}, finding.Warn,
			"item hot: counts 2", "run again; if they still differ, correct sql.liveBuyers"},
		{Problem{Field: "sql.item", Err: errors.New("sold 11 of 10")}, finding.Fail,
			"item hot: sold 11", "either correct sql.item in the profile (built-in fsctl.yaml) for this target, or the item oversold: fsctl reconcile"},
	} {
		l := f.problem("hot", c.pr)
		if l.Check != c.pr.Field || l.Status != c.status || !strings.HasPrefix(l.Detail, c.detailPrefix) || !strings.HasPrefix(l.Fix, c.fix) {
			t.Errorf("%+v: got %+v", c.pr, l)
		}
	}
}
