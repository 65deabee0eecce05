package profile

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// WriteTokens mints the tokens of buyers <prefix>0 … <prefix>n-1 for sale, valid for ttl from
// now, on every CPU, and writes them as a token file ("user token" lines, in buyer order) that a
// profile with token.type file reads. An RS256 signature costs about a millisecond: minting
// 50,000 tokens ahead of the sale keeps that minute out of the minutes before the release.
// progress, when set, is told how many are minted, about every 10%, one call at a time. A
// cancelled ctx stops the minting (a minute of it is worth a Ctrl-C) and writes nothing.
func (m *Minter) WriteTokens(ctx context.Context, w io.Writer, sale, prefix string, n int, now time.Time, ttl time.Duration, progress func(done, total int)) error {
	tokens := make([]string, n)
	errs := make([]error, n)
	var next, done atomic.Int64
	step := int64(max(1, n/10))
	var wg sync.WaitGroup
	var mu sync.Mutex // one progress call at a time, in order
	for range min(runtime.GOMAXPROCS(0), max(n, 1)) {
		wg.Go(func() {
			for k := next.Add(1) - 1; k < int64(n) && ctx.Err() == nil; k = next.Add(1) - 1 {
				tokens[k], errs[k] = m.Mint(prefix+strconv.FormatInt(k, 10), sale, now, ttl)
				if progress == nil {
					continue
				}
				mu.Lock()
				if d := done.Add(1); d%step == 0 || d == int64(n) {
					progress(int(d), n)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("minting stopped: %w", err)
	}
	for k, tok := range tokens {
		if errs[k] != nil {
			return fmt.Errorf("token of %s%d: %w", prefix, k, errs[k])
		}
		if _, err := fmt.Fprintf(w, "%s%d %s\n", prefix, k, tok); err != nil {
			return err
		}
	}
	return nil
}
