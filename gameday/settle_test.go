package gameday

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The order log is recorded while a lost Redis comes back, tried again until it is back: a try
// that meets PostgreSQL stopped by another fault is followed by others (chaos seed 2016), and
// none once Redis is back.
func TestRetryUntil(t *testing.T) {
	ctx := context.Background()
	down := errors.New("postgres unreachable")
	tries := 0
	err := retryUntil(ctx, make(chan struct{}), time.Millisecond, func() error {
		if tries++; tries < 4 {
			return down
		}
		return nil
	})
	if err != nil || tries != 4 {
		t.Fatalf("PostgreSQL back at the 4th try: %d tries, %v; want 4 and no error", tries, err)
	}

	stop := make(chan struct{})
	tries = 0
	err = retryUntil(ctx, stop, time.Hour, func() error {
		if tries++; tries == 1 {
			close(stop) // Redis came back during the first try
		}
		return down
	})
	if !errors.Is(err, down) || tries != 1 {
		t.Fatalf("Redis back during the first try: %d tries, %v; want 1 and its error", tries, err)
	}

	cctx, cancel := context.WithCancel(ctx)
	tries = 0
	err = retryUntil(cctx, make(chan struct{}), time.Hour, func() error {
		tries++
		cancel()
		return down
	})
	if !errors.Is(err, down) || tries != 1 {
		t.Fatalf("run cancelled: %d tries, %v; want 1 and its error", tries, err)
	}
}
