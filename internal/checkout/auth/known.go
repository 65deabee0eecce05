package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/golang-jwt/jwt/v5"
)

// maxKnownHeaders bounds the header spellings an HS256 verifier remembers. An issuer signs every
// token with the same header, so one or two are the rule; more are checked in full every time.
const maxKnownHeaders = 8

// knownHeaders is the fast path of an HS256 verifier for a token the cache has not seen (during a
// burst, every buyer's first request). jwt's parser decodes each token's header into a map, builds
// a Token, joins the signed parts into a new string, boxes the key and allocates an HMAC; for an
// HS256 token whose header is byte for byte one that an earlier token verified with in full, none
// of that can change the verdict: the algorithm and the key come from the header alone. So the
// fast path checks such a token with jwt's own pieces (the same strict base64, the claims decoded
// as json.Unmarshal decodes them (decodeClaims), the same Validator) and an HMAC kept from one token to the next, and
// leaves every other token, and every token it cannot accept, to jwt's parser: it can only accept
// what jwt accepts, with the same claims (FuzzKnownHeaderAgrees), and every refusal, with its
// reason, is jwt's. A header is remembered only after a token with it verified, so nobody without
// the secret can add one.
type knownHeaders struct {
	validator *jwt.Validator
	headers   atomic.Pointer[[]string]
	mu        sync.Mutex // adders
	macs      sync.Pool  // *tokenMAC
}

// tokenMAC is an HMAC-SHA256 keyed with the verifier's secret and the buffers one check needs.
type tokenMAC struct {
	mac    hash.Hash
	token  []byte // a copy of the token, for the decoders and the HMAC, which take bytes
	claims []byte // the claims' JSON
	sum    [sha256.Size]byte
	sig    [sha256.Size]byte
}

var segment = base64.RawURLEncoding.Strict()

func newKnownHeaders(secret []byte, validator *jwt.Validator) *knownHeaders {
	k := &knownHeaders{validator: validator}
	k.macs.New = func() any { return &tokenMAC{mac: hmac.New(sha256.New, secret)} }
	return k
}

// known reports whether header is the header of a token that verified in full.
func (k *knownHeaders) known(header string) bool {
	if hs := k.headers.Load(); hs != nil {
		for _, h := range *hs {
			if h == header {
				return true
			}
		}
	}
	return false
}

// learn remembers the header of token, which jwt's parser has just accepted.
func (k *knownHeaders) learn(token string) {
	header, _, _ := strings.Cut(token, ".")
	if k.known(header) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var hs []string
	if p := k.headers.Load(); p != nil {
		hs = *p
	}
	if len(hs) >= maxKnownHeaders || k.known(header) {
		return
	}
	next := append(append(make([]string, 0, len(hs)+1), hs...), strings.Clone(header))
	k.headers.Store(&next)
}

// verify checks token as jwt's parser would and returns its claims; false means "ask jwt": the
// header is not known, or anything about the token is wrong.
func (k *knownHeaders) verify(token string) (claims buyerClaims, ok bool) {
	header, rest, _ := strings.Cut(token, ".")
	payload, sig, found := strings.Cut(rest, ".")
	if !found || strings.IndexByte(sig, '.') >= 0 || !k.known(header) ||
		segment.DecodedLen(len(sig)) != sha256.Size {
		return claims, false
	}
	t := k.macs.Get().(*tokenMAC)
	defer k.macs.Put(t)
	t.token = append(t.token[:0], token...)
	signed := t.token[:len(header)+1+len(payload)]
	if n, err := segment.Decode(t.sig[:], t.token[len(signed)+1:]); err != nil || n != sha256.Size {
		return claims, false
	}
	if n := segment.DecodedLen(len(payload)); cap(t.claims) < n {
		t.claims = make([]byte, n)
	}
	n, err := segment.Decode(t.claims[:cap(t.claims)], signed[len(header)+1:])
	if err != nil || decodeClaims(t.claims[:n], &claims) != nil {
		return buyerClaims{}, false
	}
	t.mac.Reset()
	t.mac.Write(signed)
	if !hmac.Equal(t.sig[:], t.mac.Sum(t.sum[:0])) || k.validator.Validate(&claims) != nil {
		return buyerClaims{}, false
	}
	return claims, true
}
