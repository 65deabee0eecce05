package auth

import (
	"sync"
	"time"
)

// verifiedCacheSize bounds the tokens a Verifier remembers: two generations of this many entries
// (a few hundred bytes each: the token is the key), about 50 MB at most.
const verifiedCacheSize = 1 << 16

// verifiedCacheAge is how long a generation takes new tokens before it becomes the previous one,
// when it did not fill first: a token is remembered for one to two of these since its last use, so
// at a steady rate the cache holds about two minutes of new buyers, not every buyer up to the size
// bound (the 30-minute soak on the 2-core box: 85 new buyers a second filled it for 26 minutes,
// and each instance's heap looked as if it grew without bound).
const verifiedCacheAge = time.Minute

// verified is what a token's successful check established: its subject and when it expires.
type verified struct {
	sub string
	exp time.Time
}

// verifiedCache remembers tokens whose signature and claims checked out, so a buyer's next request
// with the same token (a click on a sold-out item, a retry, an order poll: most of a flash sale's
// traffic after its first second) skips the HMAC and the JSON decoding. The key is the whole token,
// so a token that differs in any byte is checked in full; expiry is checked again on every hit. It
// keeps two generations of maps: when the current one is full or a verifiedCacheAge old it becomes
// the previous one and the oldest is dropped, a bounded LRU without per-entry bookkeeping.
type verifiedCache struct {
	mu        sync.Mutex
	cur, prev map[string]verified
	// born is when cur began to take tokens, by now.
	born time.Time
	now  func() time.Time
}

func newVerifiedCache(now func() time.Time) *verifiedCache {
	return &verifiedCache{cur: make(map[string]verified), born: now(), now: now}
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
	if now := c.now(); len(c.cur) >= verifiedCacheSize || now.Sub(c.born) >= verifiedCacheAge {
		c.prev, c.cur, c.born = c.cur, make(map[string]verified, min(2*len(c.cur), verifiedCacheSize)), now
	}
	c.cur[token] = v
}
