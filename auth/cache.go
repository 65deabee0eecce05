package auth

import (
	"sync"
	"time"
)

// verifiedCacheSize bounds the tokens a Verifier remembers: two generations of this many entries
// (a few hundred bytes each: the token is the key), about 30 MB at most.
const verifiedCacheSize = 1 << 16

// verified is what a token's successful check established: its subject and when it expires.
type verified struct {
	sub string
	exp time.Time
}

// verifiedCache remembers tokens whose signature and claims checked out, so a buyer's next request
// with the same token (a click on a sold-out item, a retry, an order poll: most of a flash sale's
// traffic after its first second) skips the HMAC and the JSON decoding. The key is the whole token,
// so a token that differs in any byte is checked in full; expiry is checked again on every hit. It
// keeps two generations of maps: when the current one is full it becomes the previous one and the
// oldest is dropped, a bounded LRU without per-entry bookkeeping.
type verifiedCache struct {
	mu        sync.Mutex
	cur, prev map[string]verified
}

func newVerifiedCache() *verifiedCache {
	return &verifiedCache{cur: make(map[string]verified)}
}

// get returns the cached check of token, promoting an entry of the previous generation.
func (c *verifiedCache) get(token string) (verified, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.cur[token]; ok {
		return v, true
	}
	v, ok := c.prev[token]
	if ok {
		c.putLocked(token, v)
	}
	return v, ok
}

func (c *verifiedCache) put(token string, v verified) {
	c.mu.Lock()
	c.putLocked(token, v)
	c.mu.Unlock()
}

func (c *verifiedCache) putLocked(token string, v verified) {
	if len(c.cur) >= verifiedCacheSize {
		c.prev, c.cur = c.cur, make(map[string]verified, verifiedCacheSize)
	}
	c.cur[token] = v
}
