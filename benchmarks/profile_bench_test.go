package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// tokenBuyers is how many buyers each token benchmark prepares.
const tokenBuyers = 2_000

// BenchmarkProfilePrepare measures what a target profile's token costs per prepared buyer: the
// bundled server's HS256 profile (the baseline), the Spring-article profile's RS256 signatures,
// and a file of ready-made tokens. Preparing runs on every CPU before the release; the time is
// read when the last buyer is prepared and the run is cancelled there.
func BenchmarkProfilePrepare(b *testing.B) {
	base := trivialEndpoint(b)
	article, err := profile.Load(filepath.Join("..", "profiles", "spring-article.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	file := *article
	file.Token = profile.Token{Type: profile.TokenFile, File: tokenFile(b)}
	for _, c := range []struct {
		name string
		p    *profile.Profile
	}{{"hs256-bundled", profile.Default()}, {"rs256-article", article}, {"token-file", &file}} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				total += prepareTime(b, base, c.p)
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/tokenBuyers, "µs/buyer")
		})
	}
}

func prepareTime(b *testing.B, base string, prof *profile.Profile) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := benchPlan(base, tokenBuyers, 1)
	p.Profile, p.At = prof, time.Now().Add(time.Hour)
	var took time.Duration
	start := time.Now()
	p.Progress = func(done, total int) {
		if done == total {
			took = time.Since(start)
			cancel()
		}
	}
	if _, err := loadgen.Run(ctx, p); !errors.Is(err, context.Canceled) || took == 0 {
		b.Fatalf("want a run cancelled once all buyers were prepared, got %v", err)
	}
	return took
}

// tokenFile writes the ready-made tokens of the bench's buyers.
func tokenFile(b *testing.B) string {
	var sb strings.Builder
	for k := range tokenBuyers {
		fmt.Fprintf(&sb, "bench-%d token-%d-%s\n", k, k, strings.Repeat("x", 300))
	}
	path := filepath.Join(b.TempDir(), "tokens.txt")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}
