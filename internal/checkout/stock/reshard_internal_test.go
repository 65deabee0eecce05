package stock

import (
	"errors"
	"strings"
	"testing"
)

// redisErr is an error as go-redis returns a server's: HasErrorPrefix looks for RedisError.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

func TestReshardingErrorsSayWhatToDo(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"TRYAGAIN Multiple keys request during rehashing of slot", "shard 2: its slot is being moved between masters (a resharding), nothing ran; retry"},
		{"MOVED 2228 127.0.0.1:17702", "shard 2: its slot moved to 127.0.0.1:17702 (a resharding) faster than the client followed, nothing ran; retry"},
		{"ASK 2228 127.0.0.1:17702", "shard 2: its slot moved to 127.0.0.1:17702"},
	} {
		if got := resharding(redisErr(c.in), 2); !strings.Contains(got.Error(), c.want) || !strings.Contains(got.Error(), c.in) {
			t.Errorf("%q: %v, want %q and the original", c.in, got, c.want)
		}
	}
	if err := errors.New("dial tcp: connection refused"); resharding(err, 2) != err {
		t.Error("another error was rewritten")
	}
}
