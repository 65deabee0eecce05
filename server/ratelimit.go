package server

import (
	"context"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// RateLimiter answers whether one more request under key fits a limit of rate per second with a
// burst; *RedisLimiter implements it with GCRA on Redis, so every instance shares the counts.
type RateLimiter interface {
	Allow(ctx context.Context, key string, rate, burst int) (ok bool, retryAfter time.Duration, err error)
}

// RedisLimiter is the shared rate limiter of the checkout (go-redis/redis_rate).
type RedisLimiter struct{ l *redis_rate.Limiter }

// NewRedisLimiter returns a limiter over rdb.
func NewRedisLimiter(rdb redis.UniversalClient) *RedisLimiter {
	return &RedisLimiter{l: redis_rate.NewLimiter(rdb)}
}

// Allow implements RateLimiter.
func (l *RedisLimiter) Allow(ctx context.Context, key string, rate, burst int) (bool, time.Duration, error) {
	res, err := l.l.Allow(ctx, key, redis_rate.Limit{Rate: rate, Burst: max(burst, rate), Period: time.Second})
	if err != nil {
		return false, 0, err
	}
	return res.Allowed > 0, res.RetryAfter, nil
}

// allowRate applies the sale's per-buyer and per-address limits of one endpoint; when a limit is
// hit it answers 429 RATE_LIMITED with Retry-After and returns false. A limiter that cannot be
// reached lets the request through (and says so in the log): the limits protect the system, and
// the reserve script still protects the stock.
func (s *Server) allowRate(w http.ResponseWriter, r *http.Request, sl sale.Sale, endpoint, user string) bool {
	lim := sl.RateLimits
	if s.limiter == nil || (lim.PerUser == 0 && lim.PerAddress == 0) {
		return true
	}
	checks := []struct {
		by, key     string
		rate, burst int
	}{
		{"user", "u:" + user, lim.PerUser, lim.PerUserBurst},
		{"address", "a:" + s.clientAddress(r), lim.PerAddress, lim.PerAddressBurst},
	}
	for _, c := range checks {
		if c.rate == 0 {
			continue
		}
		ok, retry, err := s.limiter.Allow(r.Context(), "fs:rl:"+sl.ID+":"+endpoint+":"+c.key, c.rate, c.burst)
		if err != nil {
			s.log.Warn("rate limiter unreachable; letting the request through", "err", err)
			return true
		}
		if !ok {
			s.metrics.rateLimited.WithLabelValues(endpoint, c.by).Inc()
			secs := max(1, int(math.Ceil(retry.Seconds())))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			s.metrics.outcomes.WithLabelValues(string(outcome.RateLimited)).Inc()
			writeJSON(w, http.StatusTooManyRequests, errorBody{Error: outcome.RateLimited,
				Message: "too many requests per " + c.by + " on this sale's " + endpoint + " endpoint; retry after " + strconv.Itoa(secs) + "s"})
			return false
		}
	}
	return true
}

// clientAddress is the caller's IP: the first address of the configured forwarding header when
// the server sits behind a proxy that sets it, else the connection's peer.
func (s *Server) clientAddress(r *http.Request) string {
	if h := s.cfg.ClientIPHeader; h != "" {
		if v := r.Header.Get(h); v != "" {
			first, _, _ := strings.Cut(v, ",")
			return strings.TrimSpace(first)
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
