package auth

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// knownAgrees fails t unless k checks token as p does: the same verdict, and when both accept,
// the same claims.
func knownAgrees(t *testing.T, k *knownHeaders, p *jwt.Parser, token string) {
	t.Helper()
	mine, ok := k.verify(token)
	var ref buyerClaims
	_, err := p.ParseWithClaims(token, &ref, func(*jwt.Token) (any, error) { return secret, nil })
	if ok != (err == nil) {
		t.Fatalf("%s: the fast path says %v, jwt says %v", token, ok, err)
	}
	if ok && !reflect.DeepEqual(mine, ref) {
		t.Fatalf("%s: the fast path read %+v, jwt %+v", token, mine, ref)
	}
}

// knownCheckers are the fast path of each of claimVerifiers's rules, with signPayload's header
// learned, beside the parser whose verdicts it must give.
func knownCheckers(t testing.TB) (ks []*knownHeaders, ps []*jwt.Parser) {
	for _, v := range claimVerifiers(t) {
		k := newKnownHeaders(secret, v.validator)
		k.learn(signPayload([]byte(`{}`)))
		ks, ps = append(ks, k), append(ps, v.parser)
	}
	return ks, ps
}

// tweak overwrites token's bytes at the positions edits names with base64url characters and
// dots, to reach the tokens a signed one is near: a bad signature, a payload or header changed
// after signing, a segment too long or short, a dot too many.
func tweak(token string, edits []byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
	b := []byte(token)
	for i := 0; i+1 < len(edits); i += 2 {
		switch pos := int(edits[i]) * len(b) / 256; {
		case edits[i+1] == 255 && len(b) > 1: // cut a byte
			b = append(b[:pos], b[pos+1:]...)
		case edits[i+1] == 254: // add one
			b = append(b[:pos], append([]byte{'A'}, b[pos:]...)...)
		default:
			b[pos] = alphabet[int(edits[i+1])%len(alphabet)]
		}
	}
	return string(b)
}

// tweakSeeds are edits at the signature's end, in the payload, in the header, and of the length.
var tweakSeeds = [][]byte{nil, {250, 1}, {255, 3}, {128, 7}, {10, 9}, {0, 62}, {200, 64}, {255, 255}, {128, 254}, {128, 255}}

// TestKnownHeaderAgrees: for every seed payload, signed and tweaked, the fast path gives jwt's
// verdict and claims.
func TestKnownHeaderAgrees(t *testing.T) {
	ks, ps := knownCheckers(t)
	for i, k := range ks {
		for _, c := range claimSeeds {
			for _, e := range tweakSeeds {
				knownAgrees(t, k, ps[i], tweak(signPayload([]byte(c)), e))
			}
		}
	}
}

// FuzzKnownHeaderAgrees: for any signed payload, tweaked anywhere, the fast path gives jwt's verdict
// and claims.
func FuzzKnownHeaderAgrees(f *testing.F) {
	for _, c := range claimSeeds {
		for _, e := range tweakSeeds {
			f.Add([]byte(c), e)
		}
	}
	ks, ps := knownCheckers(f)
	f.Fuzz(func(t *testing.T, claims, edits []byte) {
		for i, k := range ks {
			knownAgrees(t, k, ps[i], tweak(signPayload(claims), edits))
		}
	})
}

// TestKnownHeaderIsLearnedFromVerifiedTokensOnly: the fast path takes a token only when its header
// is spelled as one of a token that verified in full; a forged token teaches it nothing, and it
// remembers a bounded number of spellings.
func TestKnownHeaderIsLearnedFromVerifiedTokensOnly(t *testing.T) {
	v, err := NewVerifier(secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	token := func(header string, key []byte, sub string) string {
		return signToken(header, []byte(`{"sub":"`+sub+`","exp":4102444800}`), key)
	}
	forged := token(`{"alg":"HS256","x":1}`, []byte("not-the-secret-not-the-secret"), "u")
	if _, err := v.Verify(forged); err == nil {
		t.Fatal("a forged token verified")
	}
	if _, ok := v.known.verify(token(`{"alg":"HS256","x":1}`, secret, "u2")); ok {
		t.Fatal("a forged token's header was learned")
	}
	first := token(`{"alg":"HS256","x":1}`, secret, "u3")
	if _, ok := v.known.verify(first); ok {
		t.Fatal("the fast path took a token whose header no token had verified with")
	}
	if user, err := v.Verify(first); err != nil || user != "u3" {
		t.Fatalf("got (%q, %v)", user, err)
	}
	if c, ok := v.known.verify(token(`{"alg":"HS256","x":1}`, secret, "u4")); !ok || c.Subject != "u4" {
		t.Fatalf("the header of a verified token was not learned: (%+v, %v)", c, ok)
	}
	for i := range 2 * maxKnownHeaders {
		h := `{"alg":"HS256","n":` + strings.Repeat("1", i+1) + `}`
		if _, err := v.Verify(token(h, secret, "u")); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(*v.known.headers.Load()); n != maxKnownHeaders {
		t.Fatalf("%d header spellings remembered, want at most %d", n, maxKnownHeaders)
	}
}

// TestKnownHeaderConcurrently: buyers verified at once, each new to the cache, all get their own
// subject, whether jwt's parser or the fast path checks them (run with -race in CI).
func TestKnownHeaderConcurrently(t *testing.T) {
	v, err := NewVerifier(secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				user := "buyer-" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				tok, err := Mint(secret, user, now, time.Hour)
				if err != nil {
					errs <- err
					return
				}
				if got, err := v.Verify(tok); err != nil || got != user {
					errs <- fmt.Errorf("%s: got (%q, %v)", user, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if hs := v.known.headers.Load(); hs == nil || len(*hs) != 1 {
		t.Fatalf("known headers %v, want Mint's one", hs)
	}
}
