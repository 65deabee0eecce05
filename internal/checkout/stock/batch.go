package stock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/groupcommit"
)

// Defaults of the hot path's round-trip batching (see Batch).
const (
	DefaultBatchMax   = 128
	DefaultBatchLanes = 2
	// batchTimeout bounds one pipeline's round trip; the client's own read and write timeouts
	// still apply to each connection.
	batchTimeout = 3 * time.Second
)

// batcher sends the commands of concurrent purchases to Redis together, through a
// groupcommit.Queue: a command that finds a lane idle goes out at once, alone; whatever arrives
// while every lane has a pipeline in flight queues, and the next lane to come back sends all of it
// (up to max) as one pipeline. Nothing waits on a timer, so a quiet server adds no latency.
//
// On a Redis Cluster the client's pipeline splits the commands by node, so each script still runs
// on the node of its keys' slot; a script never leaves its hash tag. The reserves of one shard in a
// pipeline go as one call of the reserve script (merge.go).
type batcher struct {
	rdb redis.UniversalClient
	q   *groupcommit.Queue[*batchCall]
	// reserve is the reserve script, whose calls on one shard a pipeline merges (merge.go).
	reserve *redis.Script
}

// batchCall is one command waiting for its pipeline. script, when set, is the Lua script an
// EVALSHA command runs, loaded and retried once when Redis answers NOSCRIPT (a restarted Redis).
type batchCall struct {
	ctx    context.Context
	cmd    redis.Cmder
	script *redis.Script
	done   chan struct{}
}

var callPool = sync.Pool{New: func() any { return &batchCall{done: make(chan struct{}, 1)} }}

func newBatcher(rdb redis.UniversalClient, reserve *redis.Script, maxCmds, lanes int) *batcher {
	b := &batcher{rdb: rdb, reserve: reserve}
	b.q = groupcommit.New(maxCmds, lanes, b.exec)
	return b
}

// do runs cmd in the next pipeline and returns once its answer is in cmd, or ctx ended first (the
// command may still run then, as a plain call cut short by its deadline may).
func (b *batcher) do(ctx context.Context, cmd redis.Cmder, script *redis.Script) error {
	c := callPool.Get().(*batchCall)
	c.ctx, c.cmd, c.script = ctx, cmd, script
	b.q.Add(c)
	select {
	case <-c.done:
		c.ctx, c.cmd, c.script = nil, nil, nil
		callPool.Put(c)
		return cmd.Err()
	case <-ctx.Done():
		// The lane still owns c and will signal its buffered done channel; c is not reused.
		return ctx.Err()
	}
}

// exec sends one pipeline and signals every call of it.
func (b *batcher) exec(batch []*batchCall) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	sent := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			// Its caller left before it was sent: nothing ran, nothing to undo.
			c.cmd.SetErr(err)
			c.done <- struct{}{}
			continue
		}
		sent = append(sent, c)
	}
	if len(sent) > 0 {
		send, merged := b.mergeReserves(ctx, sent)
		pipe := b.rdb.Pipeline()
		for _, c := range send {
			_ = pipe.Process(ctx, c.cmd)
		}
		_, _ = pipe.Exec(ctx) // every command carries its own answer or error
		b.retryNoScript(ctx, send)
		for _, m := range merged {
			m.answer()
		}
	}
	for _, c := range sent {
		c.done <- struct{}{}
	}
}

// retryNoScript loads the scripts Redis did not know (its script cache is empty after a restart)
// and sends their calls again; EVALSHA that answered NOSCRIPT ran nothing.
func (b *batcher) retryNoScript(ctx context.Context, sent []*batchCall) {
	var again []*batchCall
	loaded := map[*redis.Script]error{}
	for _, c := range sent {
		if c.script == nil || !redis.HasErrorPrefix(c.cmd.Err(), "NOSCRIPT") {
			continue
		}
		err, seen := loaded[c.script]
		if !seen {
			err = c.script.Load(ctx, b.rdb).Err()
			loaded[c.script] = err
		}
		if err != nil {
			c.cmd.SetErr(err)
			continue
		}
		c.cmd.SetErr(nil)
		again = append(again, c)
	}
	if len(again) == 0 {
		return
	}
	pipe := b.rdb.Pipeline()
	for _, c := range again {
		_ = pipe.Process(ctx, c.cmd)
	}
	_, _ = pipe.Exec(ctx)
}
