package auth

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/platform/plainjson"
)

// buyerClaims is what the verifier reads of a token's claims: jwt.RegisteredClaims's fields with
// their JSON names and types, except that the times decode without a JSON decoder of their own.
// jwt.NumericDate decodes each of exp, iat and nbf with a nested json.Unmarshal into a json.Number;
// during a burst every buyer's token is new to the cache, and those three nested decodes were a
// quarter of verifying it. jwt validates buyerClaims through the jwt.Claims getters as it does
// RegisteredClaims, and every token gets the same verdict (FuzzBuyerClaimsAgree).
type buyerClaims struct {
	Issuer    string           `json:"iss,omitempty"`
	Subject   string           `json:"sub,omitempty"`
	Audience  jwt.ClaimStrings `json:"aud,omitempty"`
	ExpiresAt *numericDate     `json:"exp,omitempty"`
	NotBefore *numericDate     `json:"nbf,omitempty"`
	IssuedAt  *numericDate     `json:"iat,omitempty"`
	ID        string           `json:"jti,omitempty"`
}

var _ jwt.Claims = (*buyerClaims)(nil)

func (c *buyerClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	return (*jwt.NumericDate)(c.ExpiresAt), nil
}

func (c *buyerClaims) GetNotBefore() (*jwt.NumericDate, error) {
	return (*jwt.NumericDate)(c.NotBefore), nil
}

func (c *buyerClaims) GetIssuedAt() (*jwt.NumericDate, error) {
	return (*jwt.NumericDate)(c.IssuedAt), nil
}

func (c *buyerClaims) GetIssuer() (string, error)             { return c.Issuer, nil }
func (c *buyerClaims) GetSubject() (string, error)            { return c.Subject, nil }
func (c *buyerClaims) GetAudience() (jwt.ClaimStrings, error) { return c.Audience, nil }

// numericDate is a jwt.NumericDate that decodes a JSON number itself. The JSON decoder has already
// checked the value's syntax, and a valid JSON number parses with strconv.ParseFloat exactly as
// json.Number.Float64 parses it; anything else (a string, a number out of range) goes to
// jwt.NumericDate's own decoder, so it is accepted or refused as jwt would.
type numericDate jwt.NumericDate

func (d *numericDate) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && (b[0] == '-' || '0' <= b[0] && b[0] <= '9') {
		if f, err := strconv.ParseFloat(string(b), 64); err == nil {
			*d = dateOf(f)
			return nil
		}
	}
	return (*jwt.NumericDate)(d).UnmarshalJSON(b)
}

// dateOf is jwt's newNumericDateFromSeconds, step for step.
func dateOf(f float64) numericDate {
	round, frac := math.Modf(f)
	return numericDate(*jwt.NewNumericDate(time.Unix(int64(round), int64(frac*1e9))))
}

// decodeClaims decodes a token's claims as json.Unmarshal does. Most tokens' claims are one flat
// object of ASCII strings and whole seconds, as fsctl token and most issuers write them
// ({"sub":"u1","exp":1796444246,"iat":1796440646}); simpleClaims reads those directly (json.Unmarshal
// was two thirds of checking a buyer's first token on the fast path; BenchmarkVerifyNewToken went
// from 1.7-2.0 us to 0.9-1.1), and leaves anything else (whitespace, an escape, a name it does not
// know or sees twice, any other kind of value) to json.Unmarshal, which decides. What it reads,
// json.Unmarshal reads the same (FuzzDecodeClaims).
func decodeClaims(b []byte, c *buyerClaims) error {
	if simpleClaims(b, c) {
		return nil
	}
	*c = buyerClaims{}
	return json.Unmarshal(b, c)
}

// simpleClaims decodes b into c when b is an object of the claims' own names, each at most once,
// with ASCII strings without escapes (iss, sub, jti, and aud as one string) and whole seconds of at
// most 15 digits (exp, nbf, iat), and nothing else, not even a space. False: c is partly written.
func simpleClaims(b []byte, c *buyerClaims) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	if len(b) == 2 {
		return true // {}
	}
	var seen uint8
	for i := 1; ; {
		name, next, ok := plainjson.String(b, i)
		if !ok || next >= len(b) || b[next] != ':' {
			return false
		}
		i = next + 1
		var bit uint8
		switch string(name) {
		case "iss", "sub", "jti", "aud":
			s, next, ok := plainjson.String(b, i)
			if !ok {
				return false
			}
			switch string(name) {
			case "iss":
				bit, c.Issuer = 1, string(s)
			case "sub":
				bit, c.Subject = 2, string(s)
			case "jti":
				bit, c.ID = 4, string(s)
			default:
				bit, c.Audience = 8, jwt.ClaimStrings{string(s)}
			}
			i = next
		case "exp", "nbf", "iat":
			sec, next, ok := wholeSeconds(b, i)
			if !ok {
				return false
			}
			d := dateOf(float64(sec)) // exact: at most 15 digits
			switch string(name) {
			case "exp":
				bit, c.ExpiresAt = 16, &d
			case "nbf":
				bit, c.NotBefore = 32, &d
			default:
				bit, c.IssuedAt = 64, &d
			}
			i = next
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch {
		case i == len(b)-1: // the closing brace
			return true
		case b[i] == ',':
			i++
		default:
			return false
		}
	}
}

// wholeSeconds reads the JSON number at b[i] if it is a whole number of at most 15 digits (so a
// float64 holds it exactly, as numericDate parses it), and returns it and the index after it.
func wholeSeconds(b []byte, i int) (int64, int, bool) {
	var n int64
	j := i
	for ; j < len(b) && '0' <= b[j] && b[j] <= '9'; j++ {
		n = n*10 + int64(b[j]-'0')
	}
	digits := j - i
	if digits == 0 || digits > 15 || digits > 1 && b[i] == '0' {
		return 0, 0, false
	}
	return n, j, true
}
