// Package auth verifies and mints the bearer tokens that identify buyers: HS256 with a shared
// secret, or RS256, ES256 and EdDSA tokens of an identity provider checked against its JWKS. The
// user is the token's verified "sub" claim, never something the request body says.
package auth

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// MinSecretLen is the shortest HS256 secret accepted; shorter secrets are brute-forceable.
const MinSecretLen = 16

// Leeway tolerates small clock differences between the token minter and the server.
const Leeway = 5 * time.Second

// Verifier checks buyers' tokens: HS256 ones signed with its secret (NewVerifier), or an identity
// provider's, against the keys of its JWKS (NewJWKSVerifier). Either way the secret keys the
// server's own signatures (DeriveKey).
type Verifier struct {
	secret []byte
	parser *jwt.Parser
	// validator is parser's, for the claims of a token checked without it (known).
	validator *jwt.Validator
	keyfunc   jwt.Keyfunc
	now       func() time.Time
	cache     *verifiedCache
	// known checks HS256 tokens whose header verified before without jwt's parser; nil for JWKS.
	known *knownHeaders
	// jwks is the identity provider's key set; nil for HS256.
	jwks *jwksKeys
}

// NewVerifier returns a verifier of HS256 tokens signed with secret.
func NewVerifier(secret []byte, now func() time.Time) (*Verifier, error) {
	v, err := newVerifier(secret, now, []string{jwt.SigningMethodHS256.Alg()})
	if err != nil {
		return nil, err
	}
	v.keyfunc = func(*jwt.Token) (any, error) { return v.secret, nil }
	v.known = newKnownHeaders(v.secret, v.validator)
	return v, nil
}

// newVerifier is what both kinds of verifier share: the secret, the parser's rules (only methods,
// exp required, the leeway, canonical base64) and the cache; the caller sets keyfunc.
func newVerifier(secret []byte, now func() time.Time, methods []string, extra ...jwt.ParserOption) (*Verifier, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("JWT secret is %d bytes; use at least %d", len(secret), MinSecretLen)
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(Leeway),
		// Canonical base64 only: otherwise the spare bits of a segment's last character can be
		// changed and the token still verifies, so one signed token has several spellings (the
		// fuzzer found one), and anything keyed by the token string (the verified-token cache, a
		// log search, a deny list) sees strangers.
		jwt.WithStrictDecoding(),
	}
	if now != nil {
		opts = append(opts, jwt.WithTimeFunc(now))
	} else {
		now = time.Now
	}
	opts = append(opts, extra...)
	return &Verifier{secret: secret, parser: jwt.NewParser(opts...), validator: jwt.NewValidator(opts...), now: now, cache: newVerifiedCache(now)}, nil
}

// maxTokenLen bounds the work a client can make the verifier do.
const maxTokenLen = 4096

// UserFromHeader verifies an "Authorization: Bearer <jwt>" header value and returns the user id.
// Every failure is an outcome.Unauthorized error that says what is wrong with the token.
func (v *Verifier) UserFromHeader(header string) (string, error) {
	scheme, token, ok := strings.Cut(header, " ")
	if header == "" {
		return "", outcome.Errorf(outcome.Unauthorized, "missing Authorization: Bearer token")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", outcome.Errorf(outcome.Unauthorized, "Authorization header must be \"Bearer <token>\"")
	}
	return v.Verify(token)
}

// Verify checks a token's signature, algorithm and expiry and returns its subject. A token seen
// before is answered from a bounded cache of verified tokens, its expiry checked again.
func (v *Verifier) Verify(token string) (string, error) {
	if len(token) > maxTokenLen {
		return "", outcome.Errorf(outcome.Unauthorized, "token longer than %d bytes", maxTokenLen)
	}
	if c, ok := v.cache.get(token); ok {
		if !v.now().Before(c.exp.Add(Leeway)) {
			return "", outcome.Errorf(outcome.Unauthorized, "token expired")
		}
		return c.sub, nil
	}
	// Only the compact form (a cached token passed this already): Go's base64 decoder skips CR
	// and LF, so a token with one inserted would verify as the token it was copied from while
	// being another string.
	if !compact(token) {
		return "", outcome.Errorf(outcome.Unauthorized, "invalid token: only base64url characters and dots")
	}
	if v.known != nil {
		if claims, ok := v.known.verify(token); ok {
			return v.accept(token, claims)
		}
	}
	var claims buyerClaims
	_, err := v.parser.ParseWithClaims(token, &claims, v.keyfunc)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "", outcome.Errorf(outcome.Unauthorized, "token expired")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "", outcome.Errorf(outcome.Unauthorized, "token has no %s claim", missingClaim(err))
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		// An algorithm outside the verifier's (none, HS256 where the JWKS rules) lands here too.
		return "", outcome.Errorf(outcome.Unauthorized, "token signature invalid")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "", outcome.Errorf(outcome.Unauthorized, "token issuer not accepted")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "", outcome.Errorf(outcome.Unauthorized, "token audience not accepted")
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		// Only a JWKS keyfunc fails: no key of the issuer's has the token's kid and algorithm.
		return "", outcome.Errorf(outcome.Unauthorized, "token signing key unknown to the issuer")
	case err != nil:
		return "", outcome.Errorf(outcome.Unauthorized, "invalid token")
	}
	if v.known != nil {
		v.known.learn(token)
	}
	return v.accept(token, claims)
}

// accept finishes the check of a token whose signature and claims verified: its subject must be a
// user id. Only a token that passed every check is remembered.
func (v *Verifier) accept(token string, claims buyerClaims) (string, error) {
	if !sale.ValidUserID(claims.Subject) {
		return "", outcome.Errorf(outcome.Unauthorized, "token sub must be 1-128 printable characters")
	}
	// exp is required, so it is set.
	v.cache.put(token, verified{sub: claims.Subject, exp: claims.ExpiresAt.Time})
	return claims.Subject, nil
}

// missingClaim names the required claim a token lacks: exp always, iss and aud when the verifier
// checks them. jwt says which only in its message.
func missingClaim(err error) string {
	for _, c := range []string{"iss", "aud"} {
		if strings.Contains(err.Error(), c+" claim is required") {
			return c
		}
	}
	return "exp"
}

// compact reports whether token holds nothing but the characters of a compact JWS: base64url
// and the dots between its parts.
func compact(token string) bool {
	for i := 0; i < len(token); i++ {
		if !compactByte[token[i]] {
			return false
		}
	}
	return true
}

// compactByte marks the bytes compact accepts: one lookup a byte instead of five ranges (every
// buyer's first token is scanned whole).
var compactByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
	}
	return t
}()

// Mint signs an HS256 token for user valid for ttl from now.
func Mint(secret []byte, user string, now time.Time, ttl time.Duration) (string, error) {
	if !sale.ValidUserID(user) {
		return "", fmt.Errorf("user id %q: must be 1-128 printable characters without spaces", user)
	}
	claims := jwt.RegisteredClaims{
		Subject:   user,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}
