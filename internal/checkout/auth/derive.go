package auth

import (
	"crypto/hmac"
	"crypto/sha256"
)

// DeriveKey returns a key for another signature the server makes, HMAC-SHA256(secret, label): a
// key of its own per purpose (label names it), so nothing signed for one purpose verifies for
// another, and every instance that shares the JWT secret derives the same key without a new
// secret to distribute.
func (v *Verifier) DeriveKey(label string) []byte {
	m := hmac.New(sha256.New, v.secret)
	m.Write([]byte(label))
	return m.Sum(nil)
}
