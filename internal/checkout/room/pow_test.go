package room_test

import (
	"context"
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/roomwire"
)

func newChallenges(t testing.TB, c *clock) *room.Challenges {
	t.Helper()
	ch, err := room.NewChallenges(testSecret(), c.now)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestProofOfWork(t *testing.T) {
	t.Parallel()
	const difficulty = 8
	ctx := context.Background()
	c := newClock()
	ch := newChallenges(t, c)
	issued := ch.Issue("sale-1", "alice", difficulty)
	if issued.Difficulty != difficulty || !issued.ExpiresAt.Equal(c.t.Add(room.ChallengeTTL)) {
		t.Fatalf("issued %+v", issued)
	}
	nonce, err := roomwire.Solve(ctx, issued.Value, difficulty)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Verify("sale-1", "alice", issued.Value, nonce, difficulty); err != nil {
		t.Fatalf("verify of a solved challenge: %v", err)
	}

	wrong := "0"
	for n := 0; ; n++ { // a nonce that does not do the work
		wrong = strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(issued.Value + ":" + wrong)); roomwire.LeadingZeroBits(sum[:]) < difficulty {
			break
		}
	}
	easy := ch.Issue("sale-1", "alice", 4)
	easyNonce, err := roomwire.Solve(ctx, easy.Value, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sale, user, value, nonce, message string
		difficulty                              int
	}{
		{"wrong nonce", "sale-1", "alice", issued.Value, wrong, "insufficient", difficulty},
		{"another user's challenge", "sale-1", "bob", issued.Value, nonce, "not issued to you", difficulty},
		{"another sale's challenge", "sale-2", "alice", issued.Value, nonce, "not issued to you", difficulty},
		{"lower difficulty challenge", "sale-1", "alice", easy.Value, easyNonce, "not issued to you", difficulty},
		{"tampered expiry", "sale-1", "alice", "9" + issued.Value, nonce, "not issued to you", difficulty},
		{"no nonce", "sale-1", "alice", issued.Value, "", "malformed", difficulty},
		{"garbage", "sale-1", "alice", "garbage", nonce, "not issued to you", difficulty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ch.Verify(tc.sale, tc.user, tc.value, tc.nonce, tc.difficulty)
			wantCode(t, err, outcome.InvalidRequest)
			if !strings.Contains(outcome.MessageOf(err), tc.message) {
				t.Errorf("message %q, want it to say %q", outcome.MessageOf(err), tc.message)
			}
		})
	}

	t.Run("expired challenge", func(t *testing.T) {
		later := &clock{t: c.t.Add(room.ChallengeTTL + time.Millisecond)}
		err := newChallenges(t, later).Verify("sale-1", "alice", issued.Value, nonce, difficulty)
		wantCode(t, err, outcome.InvalidRequest)
		if !strings.Contains(outcome.MessageOf(err), "expired") {
			t.Errorf("message %q, want it to say expired", outcome.MessageOf(err))
		}
	})

	t.Run("solve stops with its context", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := roomwire.Solve(cancelled, issued.Value, room.MaxDifficulty); err == nil {
			t.Fatal("Solve of an impossible challenge returned without error")
		}
	})
}

// FuzzPowVerify: Verify never panics, answers only with InvalidRequest, and accepts only a
// challenge issued for this sale and user whose work is done.
func FuzzPowVerify(f *testing.F) {
	const difficulty = 8
	c := newClock()
	ch := newChallenges(f, c)
	issued := ch.Issue("sale-1", "alice", difficulty)
	nonce, err := roomwire.Solve(context.Background(), issued.Value, difficulty)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(issued.Value, nonce)
	f.Add(issued.Value, "0")
	f.Add("", "")
	f.Add("1.", "1")
	f.Add("-1."+strings.Repeat("A", 43), "1")
	f.Add(strings.Repeat(".", 200), strings.Repeat("9", 100))
	f.Fuzz(func(t *testing.T, value, nonce string) {
		err := ch.Verify("sale-1", "alice", value, nonce, difficulty)
		if err != nil {
			if outcome.CodeOf(err) != outcome.InvalidRequest {
				t.Fatalf("refusal with code %s: %v", outcome.CodeOf(err), err)
			}
			return
		}
		if sum := sha256.Sum256([]byte(value + ":" + nonce)); roomwire.LeadingZeroBits(sum[:]) < difficulty {
			t.Fatalf("accepted %q / %q without the work", value, nonce)
		}
		if value != issued.Value {
			t.Fatalf("accepted %q, which was never issued", value)
		}
	})
}
