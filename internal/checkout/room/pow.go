package room

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/roomwire"
)

// ChallengeTTL is how long an issued challenge can be solved and presented.
const ChallengeTTL = 2 * time.Minute

// MaxDifficulty is the most leading zero bits a SHA-256 digest can have.
const MaxDifficulty = roomwire.MaxDifficulty

// Bounds on what Verify reads, so a client cannot make it hash much.
const (
	maxValueLen = 128
	maxNonceLen = 64
)

// Challenges issues and checks proof-of-work challenges for queue entry. A challenge is stateless
// (its value carries its expiry and a MAC over sale, user, expiry and difficulty), so any instance
// verifies what another issued. The work is finding a nonce such that SHA-256(value + ":" + nonce)
// has at least difficulty leading zero bits: 2^difficulty hashes on average. Difficulty 16 is about
// 65k hashes, a few milliseconds for a buyer; a farm pays it once per account per join. A solution
// may be presented again until its challenge expires, which is harmless: joining is idempotent.
type Challenges struct {
	secret []byte
	now    func() time.Time
}

// Challenge is work asked of a buyer before joining a queue.
type Challenge struct {
	Value      string
	Difficulty int
	ExpiresAt  time.Time
}

// NewChallenges returns Challenges keyed by secret (at least MinSecretLen bytes); now is the clock
// (time.Now when nil).
func NewChallenges(secret []byte, now func() time.Time) (*Challenges, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("proof-of-work secret is %d bytes; use at least %d", len(secret), MinSecretLen)
	}
	if now == nil {
		now = time.Now
	}
	return &Challenges{secret: secret, now: now}, nil
}

// Issue returns a challenge for user in sale, valid ChallengeTTL; difficulty is clamped to
// 0..MaxDifficulty (sale.MaxPowDifficulty bounds what a sale may ask).
func (c *Challenges) Issue(saleID, userID string, difficulty int) Challenge {
	difficulty = min(max(difficulty, 0), MaxDifficulty)
	exp := c.now().Add(ChallengeTTL).UnixMilli()
	value := strconv.FormatInt(exp, 10) + "." + c.mac(saleID, userID, exp, difficulty)
	return Challenge{Value: value, Difficulty: difficulty, ExpiresAt: time.UnixMilli(exp)}
}

func (c *Challenges) mac(saleID, userID string, expMs int64, difficulty int) string {
	h := hmac.New(sha256.New, c.secret)
	// Sale ids are slugs and user ids have no spaces, but lengths make the encoding unambiguous anyway.
	fmt.Fprintf(h, "%d:%s|%d:%s|%d|%d", len(saleID), saleID, len(userID), userID, expMs, difficulty)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Verify checks that value is a live challenge issued for user in sale at this difficulty and that
// nonce solves it. Every refusal is an *outcome.Error with outcome.InvalidRequest.
func (c *Challenges) Verify(saleID, userID, value, nonce string, difficulty int) error {
	if difficulty < 0 || difficulty > MaxDifficulty {
		return outcome.Errorf(outcome.InvalidRequest, "proof-of-work difficulty %d out of range", difficulty)
	}
	if len(value) > maxValueLen || nonce == "" || len(nonce) > maxNonceLen {
		return outcome.Errorf(outcome.InvalidRequest, "proof-of-work challenge or nonce is malformed")
	}
	expStr, sig, ok := strings.Cut(value, ".")
	exp, err := strconv.ParseInt(expStr, 10, 64)
	// Only the form Issue writes: "+5" and "05" would parse to the same expiry under another value.
	canonical := err == nil && strconv.FormatInt(exp, 10) == expStr
	if !ok || !canonical || !hmac.Equal([]byte(sig), []byte(c.mac(saleID, userID, exp, difficulty))) {
		return outcome.Errorf(outcome.InvalidRequest,
			"proof-of-work challenge was not issued to you for this sale at difficulty %d; ask for a new one", difficulty)
	}
	if c.now().UnixMilli() > exp {
		return outcome.Errorf(outcome.InvalidRequest, "proof-of-work challenge expired at %s; ask for a new one",
			time.UnixMilli(exp).UTC().Format(time.RFC3339))
	}
	sum := sha256.Sum256([]byte(value + ":" + nonce))
	if roomwire.LeadingZeroBits(sum[:]) < difficulty {
		return outcome.Errorf(outcome.InvalidRequest, "proof of work insufficient: SHA-256(challenge:nonce) needs %d leading zero bits", difficulty)
	}
	return nil
}
