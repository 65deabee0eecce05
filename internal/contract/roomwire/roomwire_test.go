package roomwire

import (
	"context"
	"crypto/sha256"
	"testing"
)

func TestLeadingZeroBits(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want int
	}{
		{nil, 0}, {[]byte{0x80}, 0}, {[]byte{0x01}, 7}, {[]byte{0, 0x40}, 9}, {[]byte{0, 0, 0}, 24}, {[]byte{0x0f, 0}, 4},
	} {
		if got := LeadingZeroBits(tc.b); got != tc.want {
			t.Errorf("LeadingZeroBits(%x) = %d, want %d", tc.b, got, tc.want)
		}
	}
}

// TestSolve: a solution has the zero bits asked for; a cancelled solve and an impossible
// difficulty are errors.
func TestSolve(t *testing.T) {
	for _, difficulty := range []int{0, 1, 8, 12} {
		nonce, err := Solve(context.Background(), "challenge-value", difficulty)
		if err != nil {
			t.Fatalf("difficulty %d: %v", difficulty, err)
		}
		sum := sha256.Sum256([]byte("challenge-value:" + nonce))
		if LeadingZeroBits(sum[:]) < difficulty {
			t.Fatalf("difficulty %d: nonce %s gives %d zero bits", difficulty, nonce, LeadingZeroBits(sum[:]))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Solve(ctx, "v", 40); err == nil {
		t.Error("a cancelled solve returned a nonce")
	}
	for _, d := range []int{-1, MaxDifficulty + 1} {
		if _, err := Solve(context.Background(), "v", d); err == nil {
			t.Errorf("difficulty %d accepted", d)
		}
	}
}
