package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// signPayload signs claims (any bytes) as an HS256 token with the test secret.
func signPayload(claims []byte) string {
	return signToken(`{"alg":"HS256","typ":"JWT"}`, claims, secret)
}

// signToken signs header and claims (any bytes) with HMAC-SHA256 under key, as a compact token.
func signToken(header string, claims, key []byte) string {
	enc := base64.RawURLEncoding
	s := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(s))
	return s + "." + enc.EncodeToString(mac.Sum(nil))
}

// jwtErrors are the verdicts the verifier tells apart.
var jwtErrors = []error{jwt.ErrTokenExpired, jwt.ErrTokenNotValidYet, jwt.ErrTokenUsedBeforeIssued,
	jwt.ErrTokenRequiredClaimMissing, jwt.ErrTokenInvalidIssuer, jwt.ErrTokenInvalidAudience,
	jwt.ErrTokenSignatureInvalid, jwt.ErrTokenMalformed, jwt.ErrTokenInvalidClaims}

// agree parses token into buyerClaims and into jwt.RegisteredClaims with the same parser and
// fails t unless both give the same verdict, subject and expiry.
func agree(t *testing.T, p *jwt.Parser, token string) {
	t.Helper()
	key := func(*jwt.Token) (any, error) { return secret, nil }
	var mine buyerClaims
	var ref jwt.RegisteredClaims
	_, errMine := p.ParseWithClaims(token, &mine, key)
	_, errRef := p.ParseWithClaims(token, &ref, key)
	if (errMine == nil) != (errRef == nil) {
		t.Fatalf("%s: buyerClaims %v, RegisteredClaims %v", token, errMine, errRef)
	}
	for _, e := range jwtErrors {
		if errors.Is(errMine, e) != errors.Is(errRef, e) {
			t.Fatalf("%s: %v is %v for buyerClaims (%v) and not for RegisteredClaims (%v)", token, e, errors.Is(errMine, e), errMine, errRef)
		}
	}
	if errMine != nil {
		return
	}
	if mine.Subject != ref.Subject || !mine.ExpiresAt.Time.Equal(ref.ExpiresAt.Time) {
		t.Fatalf("%s: buyerClaims (%q, %v), RegisteredClaims (%q, %v)", token, mine.Subject, mine.ExpiresAt.Time, ref.Subject, ref.ExpiresAt.Time)
	}
}

// claimSeeds are payloads at the edges of the time claims' decoding.
var claimSeeds = []string{
	`{"sub":"u","exp":1896040000}`,
	`{"sub":"u","exp":1896040000.75,"iat":1796000000.5,"nbf":1796000000}`,
	`{"sub":"u","exp":"1896040000"}`,
	`{"sub":"u","exp":"soon"}`,
	`{"sub":"u","exp":null}`,
	`{"sub":"u","exp":true}`,
	`{"sub":"u","exp":-1}`,
	`{"sub":"u","exp":1e400}`,
	`{"sub":"u","exp":18960400e2}`,
	`{"sub":"u","exp":1896040000,"nbf":1996040000}`,
	`{"sub":"u","exp":1896040000,"iat":1996040000}`,
	`{"sub":"u","exp":1896040000,"iss":"https://idp","aud":["fsctl","x"]}`,
	`{"sub":"u","exp":1896040000,"iss":"https://idp","aud":"fsctl"}`,
	`{"sub":"u","exp":1896040000,"iss":"other","aud":7}`,
	`{"sub":"u","EXP":1896040000,"Sub":"v","exp":1696040000}`,
	`{"sub":"u","exp":{"a":1}}`,
	`[1,2]`,
	`{"sub":"u","exp":1896040000,"exp":"x"}`,
}

// claimVerifiers are the verifier's parser rules: HS256 alone, and with an issuer and audience
// required as a JWKS verifier configures them.
func claimVerifiers(t testing.TB) []*Verifier {
	now := func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
	plain, err := newVerifier(secret, now, []string{"HS256"})
	if err != nil {
		t.Fatal(err)
	}
	idp, err := newVerifier(secret, now, []string{"HS256"}, jwt.WithIssuer("https://idp"), jwt.WithAudience("fsctl"))
	if err != nil {
		t.Fatal(err)
	}
	return []*Verifier{plain, idp}
}

// claimParsers are claimVerifiers's parsers.
func claimParsers(t testing.TB) []*jwt.Parser {
	var ps []*jwt.Parser
	for _, v := range claimVerifiers(t) {
		ps = append(ps, v.parser)
	}
	return ps
}

// TestBuyerClaimsAgree: buyerClaims gives every seed payload jwt.RegisteredClaims's verdict.
func TestBuyerClaimsAgree(t *testing.T) {
	for _, p := range claimParsers(t) {
		for _, c := range claimSeeds {
			agree(t, p, signPayload([]byte(c)))
		}
	}
}

// FuzzBuyerClaimsAgree: for any signed payload, buyerClaims and jwt.RegisteredClaims agree.
func FuzzBuyerClaimsAgree(f *testing.F) {
	for _, c := range claimSeeds {
		f.Add([]byte(c))
	}
	parsers := claimParsers(f)
	f.Fuzz(func(t *testing.T, claims []byte) {
		for _, p := range parsers {
			agree(t, p, signPayload(claims))
		}
	})
}

// BenchmarkVerifyNewToken verifies a token the cache has not seen, as during a burst every
// buyer's first request is.
func BenchmarkVerifyNewToken(b *testing.B) {
	now := time.Now()
	tokens := make([]string, 1<<14)
	for i := range tokens {
		tokens[i], _ = Mint(secret, "buyer-"+strconv.Itoa(i), now, time.Hour)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%len(tokens) == 0 {
			b.StopTimer()
			v, err := NewVerifier(secret, nil) // an empty cache
			if err != nil {
				b.Fatal(err)
			}
			verifier = v
			b.StartTimer()
		}
		if _, err := verifier.Verify(tokens[i%len(tokens)]); err != nil {
			b.Fatal(err)
		}
	}
}

var verifier *Verifier

// decodeSeeds are claims simpleClaims reads itself and claims it must leave to json.Unmarshal.
var decodeSeeds = []string{
	`{"sub":"u1","exp":1796444246,"iat":1796440646}`,
	`{"iss":"https://idp","sub":"u","aud":"fsctl","jti":"j","exp":1,"nbf":0,"iat":999999999999999}`,
	`{}`, `{"exp":1234567890123456}`, `{"exp":01}`, `{"exp":-1}`, `{"exp":1.5}`, `{"exp":1e3}`,
	`{"sub":"a\"b"}`, `{"sub":"caf\u00e9"}`, "{\"sub\":\"caf\xc3\xa9\"}", `{ "sub":"u"}`, `{"sub":"u",}`,
	`{"sub":"u"}}`, `{"sub":"u"}x`, `{"aud":"a","aud":"b"}`, `{"aud":["a"]}`, `{"Sub":"u"}`,
	`{"sub":null}`, `{"name":"x","sub":"u"}`, `{"sub":"u","exp":1796444246`, `{"sub"}`, `{"":""}`,
}

// TestSimpleClaimsReadsTheUsualTokens: the claims fsctl token writes, and an issuer's usual ones,
// are read without json.Unmarshal; anything unusual is not.
func TestSimpleClaimsReadsTheUsualTokens(t *testing.T) {
	for _, s := range decodeSeeds[:3] {
		if !simpleClaims([]byte(s), &buyerClaims{}) {
			t.Errorf("%s: left to json.Unmarshal", s)
		}
	}
	for _, s := range decodeSeeds[3:] {
		if simpleClaims([]byte(s), &buyerClaims{}) {
			t.Errorf("%s: read without json.Unmarshal", s)
		}
	}
}

// FuzzDecodeClaims: decodeClaims accepts and refuses what json.Unmarshal does, with the same claims.
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range append(decodeSeeds, claimSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want buyerClaims
		gotErr, wantErr := decodeClaims(b, &got), json.Unmarshal(b, &want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: decodeClaims said %v, json.Unmarshal %v", b, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeClaims read %+v, json.Unmarshal %+v", b, got, want)
		}
	})
}
