package profile

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash"
	"slices"
	"strconv"
	"sync"
	"time"
)

// hs256 mints HS256 tokens with the claims' JSON laid out once: a buyer's token costs its
// templates' rendering, two base64 encodings and one HMAC, where golang-jwt encodes a claims map
// (sorting its keys by reflection) and keys a new HMAC for every token. Its tokens are the very
// bytes golang-jwt makes of the same claims (TestHS256MintsWhatGolangJWTMints); for 500,000
// buyers the tokens were most of the preparation's CPU.
type hs256 struct {
	head   string      // the header's segment and its dot, the same for every token
	claims []claimPart // in JSON's key order, as encoding/json sorts a map
	// scratch holds a *mintScratch per preparing goroutine at a time: the signer keyed with the
	// secret and the buffers a token is written in, so that minting leaves nothing behind but
	// the token (buyers are prepared by the hundred thousand, and all they leave is collected).
	scratch sync.Pool
}

// mintScratch is one preparing goroutine's signer and buffers.
type mintScratch struct {
	mac               hash.Hash
	payload, tok, val []byte
	vars              Vars
}

// claimPart is one claim: its key's JSON (with the separator before it) and its value's, or
// what makes the value per token.
type claimPart struct {
	key   []byte
	fixed []byte // the value's JSON when it is the same in every token
	tmpl  string // a string claim's template, rendered per token, when fixed is nil
	at    int    // claimIssued or claimExpires for the times of each token
}

const (
	claimIssued = iota + 1
	claimExpires
)

// newHS256 lays out the profile's claims (over iat and exp) for tokens signed with secret.
func newHS256(claims map[string]any, secret []byte) (*hs256, error) {
	parts := map[string]claimPart{"iat": {at: claimIssued}, "exp": {at: claimExpires}}
	for k, v := range claims {
		if s, ok := v.(string); ok {
			parts[k] = claimPart{tmpl: s}
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		parts[k] = claimPart{fixed: b}
	}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := &hs256{head: base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "."}
	for i, k := range keys {
		name, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		p := parts[k]
		p.key = append(append([]byte{sep}, name...), ':')
		h.claims = append(h.claims, p)
	}
	h.scratch.New = func() any { return &mintScratch{mac: hmac.New(sha256.New, secret), vars: Vars{}} }
	return h, nil
}

// mint makes the token of user for sale, valid from now for ttl.
func (h *hs256) mint(user, sale string, now time.Time, ttl time.Duration) (string, error) {
	s := h.scratch.Get().(*mintScratch)
	defer h.scratch.Put(s)
	payload := s.payload[:0]
	for _, p := range h.claims {
		payload = append(payload, p.key...)
		switch {
		case p.at == claimIssued:
			payload = strconv.AppendInt(payload, now.Unix(), 10)
		case p.at == claimExpires:
			payload = strconv.AppendInt(payload, now.Add(ttl).Unix(), 10)
		case p.fixed != nil:
			payload = append(payload, p.fixed...)
		default:
			s.vars["user"], s.vars["sale"] = user, sale
			s.val = AppendRender(s.val[:0], p.tmpl, s.vars)
			var err error
			if payload, err = appendJSONString(payload, s.val); err != nil {
				return "", err
			}
		}
	}
	payload = append(payload, '}')
	s.payload = payload
	enc := base64.RawURLEncoding
	s.tok = append(s.tok[:0], h.head...)
	tok := enc.AppendEncode(s.tok, payload)
	s.mac.Reset()
	s.mac.Write(tok)
	var sum [sha256.Size]byte
	sig := s.mac.Sum(sum[:0])
	tok = append(tok, '.')
	tok = enc.AppendEncode(tok, sig)
	s.tok = tok
	return string(tok), nil
}

// appendJSONString appends b as a JSON string, as encoding/json writes it (as golang-jwt's
// claims are: <, > and & escaped too): as it is between quotes when nothing in it needs an
// escape, else through encoding/json.
func appendJSONString(dst, b []byte) ([]byte, error) {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			v, err := json.Marshal(string(b))
			return append(dst, v...), err
		}
	}
	dst = append(dst, '"')
	dst = append(dst, b...)
	return append(dst, '"'), nil
}
