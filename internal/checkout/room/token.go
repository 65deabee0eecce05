package room

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// MinSecretLen is the shortest HMAC secret accepted for admission tokens and challenges.
const MinSecretLen = 16

// tokenLeeway tolerates clock differences between the instance that minted a token and the one
// that checks it; an admission is short-lived, so more would matter.
const tokenLeeway = 2 * time.Second

// admissionType is the typ claim that tells an admission token from a buyer's bearer token signed
// with the same kind of key.
const admissionType = "admission"

// maxTokenLen bounds the work a client can make Verify do.
const maxTokenLen = 4096

// admissionClaims are sub (user), sale, jti (ticket), typ, iat and exp.
type admissionClaims struct {
	Sale string `json:"sale"`
	Type string `json:"typ"`
	jwt.RegisteredClaims
}

// Tokens mints and verifies admission tokens: short-lived HS256 JWTs that say a buyer was admitted
// from a sale's waiting room, so any instance's purchase path can check admission without Redis.
type Tokens struct {
	secret []byte
	now    func() time.Time
	parser *jwt.Parser
}

// NewTokens returns Tokens signing with secret (at least MinSecretLen bytes); now is the clock
// (time.Now when nil).
func NewTokens(secret []byte, now func() time.Time) (*Tokens, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("admission token secret is %d bytes; use at least %d", len(secret), MinSecretLen)
	}
	if now == nil {
		now = time.Now
	}
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(tokenLeeway),
		jwt.WithTimeFunc(now),
	)
	return &Tokens{secret: secret, now: now, parser: parser}, nil
}

// Mint signs an admission token for user in sale, naming the admitting ticket, valid for ttl. Pass
// the time left on the ticket's lease, so the token lapses with the slot. The expiry is whole
// seconds (JWT NumericDate), rounded down.
func (t *Tokens) Mint(userID, saleID, ticketID string, ttl time.Duration) (string, time.Time, error) {
	if userID == "" || saleID == "" || ticketID == "" || ttl <= 0 {
		return "", time.Time{}, fmt.Errorf("mint admission token: user, sale, ticket and a positive ttl are required")
	}
	now := t.now()
	exp := jwt.NewNumericDate(now.Add(ttl))
	claims := admissionClaims{Sale: saleID, Type: admissionType, RegisteredClaims: jwt.RegisteredClaims{
		Subject: userID, ID: ticketID, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: exp,
	}}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("mint admission token: %w", err)
	}
	return token, exp.Time, nil
}

// Verify checks that token admits user to sale and returns the admitting ticket. Every refusal is
// an *outcome.Error with outcome.NotAdmitted whose message says what is wrong.
func (t *Tokens) Verify(token, userID, saleID string) (string, error) {
	if len(token) > maxTokenLen {
		return "", outcome.Errorf(outcome.NotAdmitted, "admission token is not valid: longer than %d bytes", maxTokenLen)
	}
	var c admissionClaims
	_, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil })
	switch {
	case errors.Is(err, jwt.ErrTokenExpired) && c.ExpiresAt != nil:
		return "", outcome.Errorf(outcome.NotAdmitted, "admission token expired at %s; poll the queue for a new one",
			c.ExpiresAt.UTC().Format(time.RFC3339))
	case err != nil:
		return "", outcome.Errorf(outcome.NotAdmitted, "admission token is not valid")
	case c.Type != admissionType || c.ID == "":
		return "", outcome.Errorf(outcome.NotAdmitted, "admission token is not valid: not an admission token")
	case c.Subject != userID:
		return "", outcome.Errorf(outcome.NotAdmitted, "admission token belongs to another buyer")
	case c.Sale != saleID:
		return "", outcome.Errorf(outcome.NotAdmitted, "admission token is for sale %s", c.Sale)
	}
	return c.ID, nil
}
