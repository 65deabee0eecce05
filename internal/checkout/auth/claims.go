package auth

import (
	"math"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
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
			// jwt's newNumericDateFromSeconds, step for step.
			round, frac := math.Modf(f)
			*d = numericDate(*jwt.NewNumericDate(time.Unix(int64(round), int64(frac*1e9))))
			return nil
		}
	}
	return (*jwt.NumericDate)(d).UnmarshalJSON(b)
}
