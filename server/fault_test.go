package server

import (
	"fmt"
	"testing"
)

func TestCrashHookExitsAtTheArmedReservation(t *testing.T) {
	tests := []struct {
		after    int
		calls    int
		wantExit int // 0: never
	}{
		{0, 10, 0},
		{-1, 10, 0},
		{3, 2, 0},
		{3, 5, 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.after), func(t *testing.T) {
			exitedAt, code := 0, 0
			calls := 0
			h := newCrashHook(tt.after, func(c int) {
				if exitedAt == 0 {
					exitedAt, code = calls, c
				}
			})
			for calls = 1; calls <= tt.calls; calls++ {
				h.reserved()
			}
			if exitedAt != tt.wantExit {
				t.Fatalf("exit at call %d, want %d", exitedAt, tt.wantExit)
			}
			if tt.wantExit != 0 && code != 137 {
				t.Errorf("exit code %d, want 137", code)
			}
		})
	}
}
