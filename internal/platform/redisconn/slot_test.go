package redisconn

import (
	"strconv"
	"strings"
	"testing"
)

func TestKeySlot(t *testing.T) {
	// foo and somekey are the examples of the Redis Cluster spec; the tag cases show which part is hashed.
	tests := map[string]int{
		"foo":                  12182,
		"somekey":              11058,
		"123456789":            12739,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"foo{}{bar}":           8363, // an empty first tag hashes the whole key
		"{}":                   15257,
	}
	for key, want := range tests {
		if got := KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

func FuzzKeySlot(f *testing.F) {
	f.Add("{fs:s:i}:stock")
	f.Add("{")
	f.Add("a{b}c{d}")
	f.Fuzz(func(t *testing.T, key string) {
		slot := KeySlot(key)
		if slot < 0 || slot >= 16384 {
			t.Fatalf("slot %d out of range", slot)
		}
		// An empty tag does not count: "{}:x" hashes whole.
		if key != "" && !containsBrace(key) && KeySlot("{"+key+"}:x") != KeySlot("{"+key+"}:y") {
			t.Fatalf("keys with the same tag %q hash apart", key)
		}
	})
}

func containsBrace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '{' || s[i] == '}' {
			return true
		}
	}
	return false
}

func TestSharedSlot(t *testing.T) {
	if slot, _, _, ok := SharedSlot([]string{"{item:1}:stock", "{item:1}:buyers"}); !ok || slot != KeySlot("item:1") {
		t.Fatalf("one tag: slot %d ok %v", slot, ok)
	}
	slot, stray, s, ok := SharedSlot([]string{"{item:1}:stock", "{item:1}:buyers", "buyers:1"})
	if ok || stray != "buyers:1" || s != KeySlot("buyers:1") || slot != KeySlot("item:1") {
		t.Fatalf("a key without the tag: %d %q %d %v", slot, stray, s, ok)
	}
	if _, _, _, ok := SharedSlot(nil); !ok {
		t.Fatal("no keys share no slot trouble")
	}
}

func TestSpreadTag(t *testing.T) {
	for _, c := range []struct {
		tag  string
		k, n int
		want string
	}{
		{"{fs:s:i}", 0, 1, "{fs:s:i}"},     // unsharded: as it is
		{"plain:key", 1, 4, "plain:key"},   // no hash tag to salt
		{"{}:x", 1, 4, "{}:x"},             // an empty tag is no hash tag
		{"{fs:s:i:9}", 9, 4, "{fs:s:i:9}"}, // k out of range
	} {
		if got := SpreadTag(c.tag, c.k, c.n); got != c.want {
			t.Errorf("SpreadTag(%q, %d, %d) = %q, want %q", c.tag, c.k, c.n, got, c.want)
		}
	}
	for _, n := range []int{2, 3, 7, 64} {
		for k := range n {
			tag := "{item:" + strconv.Itoa(k) + "}"
			got := SpreadTag(tag, k, n)
			slot := KeySlot(got + ":stock")
			mid := (float64(k) + 0.5) * Slots / float64(n)
			if d := float64(slot) + 0.5 - mid; d > Slots/float64(n)/16+0.5 || d < -Slots/float64(n)/16-0.5 {
				t.Errorf("SpreadTag(%q, %d, %d) = %q in slot %d, %.0f from the middle of its stride", tag, k, n, got, slot, d)
			}
			if !strings.HasPrefix(got, "{item:"+strconv.Itoa(k)) || !strings.HasSuffix(got, "}") {
				t.Errorf("SpreadTag(%q, %d, %d) = %q: the salt must stay inside the braces", tag, k, n, got)
			}
			if again := SpreadTag(tag, k, n); again != got {
				t.Errorf("SpreadTag is not stable: %q then %q", got, again)
			}
		}
	}
}
