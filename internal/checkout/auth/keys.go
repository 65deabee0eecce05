package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/contract/sale"
)

// SigningKey is a private key that signs buyers' tokens as an identity provider does: its JWS
// algorithm follows from the key (ES256 for P-256, RS256 for RSA, EdDSA for Ed25519) and its kid
// is the RFC 7638 thumbprint of its public half, the id its JWKS publishes it under, so the
// verifier finds the key without any other agreement.
type SigningKey struct {
	// Method is the JWS algorithm the key signs with.
	Method jwt.SigningMethod
	// KID is the key's RFC 7638 thumbprint.
	KID string
	key crypto.Signer
}

// NewSigningKey wraps a private key; only P-256 ECDSA, RSA of 2048 bits or more and Ed25519 sign.
func NewSigningKey(key crypto.Signer) (*SigningKey, error) {
	var m jwt.SigningMethod
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("ECDSA key on %s: only P-256 (ES256) is supported", k.Curve.Params().Name)
		}
		m = jwt.SigningMethodES256
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("RSA key of %d bits: use at least 2048", k.N.BitLen())
		}
		m = jwt.SigningMethodRS256
	case ed25519.PrivateKey:
		m = jwt.SigningMethodEdDSA
	default:
		return nil, fmt.Errorf("a %T does not sign tokens: use an ECDSA P-256, RSA or Ed25519 key", key)
	}
	kid, err := Thumbprint(key.Public())
	if err != nil {
		return nil, err
	}
	return &SigningKey{Method: m, KID: kid, key: key}, nil
}

// LoadSigningKey reads a PEM private key (PKCS#8, or SEC 1 "EC PRIVATE KEY", or PKCS#1 "RSA
// PRIVATE KEY"). Errors name the file, never its contents.
func LoadSigningKey(path string) (*SigningKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("signing key %s: no PEM block", path)
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("signing key %s: not a private key (%s): %w", path, block.Type, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("signing key %s: a %T does not sign", path, key)
	}
	k, err := NewSigningKey(signer)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return k, nil
}

// Public is the key's public half, what the JWKS publishes.
func (k *SigningKey) Public() crypto.PublicKey { return k.key.Public() }

// Sign makes a compact JWS of claims with the key's algorithm and its kid in the header.
func (k *SigningKey) Sign(claims jwt.Claims) (string, error) {
	t := jwt.NewWithClaims(k.Method, claims)
	t.Header["kid"] = k.KID
	return t.SignedString(k.key)
}

// Mint signs a token for user valid for ttl from now, with iss and aud when not empty: what an
// identity provider would issue for the buyer.
func (k *SigningKey) Mint(user, issuer, audience string, now time.Time, ttl time.Duration) (string, error) {
	if !sale.ValidUserID(user) {
		return "", fmt.Errorf("user id %q: must be 1-128 printable characters without spaces", user)
	}
	claims := jwt.RegisteredClaims{
		Subject:   user,
		Issuer:    issuer,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
	if audience != "" {
		claims.Audience = jwt.ClaimStrings{audience}
	}
	return k.Sign(claims)
}

// jwk is a public key as a JWK with the given kid, "use": "sig" and its algorithm.
func jwk(pub crypto.PublicKey, kid string) (jwkset.JWKMarshal, error) {
	alg := jwkset.AlgEdDSA
	switch pub.(type) {
	case *ecdsa.PublicKey:
		alg = jwkset.AlgES256
	case *rsa.PublicKey:
		alg = jwkset.AlgRS256
	}
	j, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{ALG: alg, KID: kid, USE: jwkset.UseSig}})
	if err != nil {
		return jwkset.JWKMarshal{}, fmt.Errorf("public key as a JWK: %w", err)
	}
	return j.Marshal(), nil
}

// Thumbprint is the RFC 7638 thumbprint of a public key (SHA-256, base64url): the hash of its
// required JWK members in lexicographic order, the same for the same key wherever it is computed.
func Thumbprint(pub crypto.PublicKey) (string, error) {
	j, err := jwk(pub, "")
	if err != nil {
		return "", err
	}
	// encoding/json writes a map's keys sorted and without spaces: RFC 7638's canonical form
	// for these members, whose values are base64url and names (nothing json escapes).
	members := map[string]string{"kty": string(j.KTY)}
	switch j.KTY {
	case jwkset.KtyEC:
		members["crv"], members["x"], members["y"] = string(j.CRV), j.X, j.Y
	case jwkset.KtyRSA:
		members["e"], members["n"] = j.E, j.N
	case jwkset.KtyOKP:
		members["crv"], members["x"] = string(j.CRV), j.X
	default:
		return "", fmt.Errorf("no thumbprint for a %s key", j.KTY)
	}
	b, err := json.Marshal(members)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// JWKS is the public JSON Web Key Set of keys, each under its thumbprint: what an issuer serves
// at its jwks_uri.
func JWKS(keys ...*SigningKey) ([]byte, error) {
	set := jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{}}
	for _, k := range keys {
		j, err := jwk(k.Public(), k.KID)
		if err != nil {
			return nil, err
		}
		set.Keys = append(set.Keys, j)
	}
	return json.Marshal(set)
}
