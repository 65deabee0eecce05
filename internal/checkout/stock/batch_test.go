package stock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// pipeHook is a go-redis hook that records the size of every pipeline carrying the test's own
// commands (those with an argument containing its unique id; the client's connection handshakes
// are ignored) and counts their SCRIPT LOAD calls. With hold set, the first such pipeline waits in
// the hook, after closing entered, until release is called.
type pipeHook struct {
	id      string
	hold    bool
	entered chan struct{}
	gate    chan struct{}
	open    sync.Once

	mu    sync.Mutex
	sizes []int
	loads int
}

// newPipeHook adds a pipeHook to a client of the test's own (testenv.Redis gives each test a new
// client, so no other test sees the hook) and returns a batcher over that client.
func newPipeHook(t *testing.T, maxCmds, lanes int, hold bool) (*batcher, *pipeHook) {
	t.Helper()
	rdb := testenv.Redis(t)
	h := &pipeHook{id: testenv.ID(t, "batch"), hold: hold, entered: make(chan struct{}), gate: make(chan struct{})}
	// Registered after testenv.Redis's Close, so it runs first: a failed test never leaves a
	// pipeline stuck in the hook.
	t.Cleanup(h.release)
	rdb.AddHook(h)
	return newBatcher(rdb, nil, maxCmds, lanes), h
}

// key returns a key under the test's id, deleted when the test ends.
func (h *pipeHook) key(t *testing.T, rdb redis.UniversalClient, name string) string {
	t.Helper()
	k := h.id + ":" + name
	t.Cleanup(func() { _ = rdb.Del(context.Background(), k).Err() })
	return k
}

func (h *pipeHook) release() { h.open.Do(func() { close(h.gate) }) }

// mine reports whether one of the command's arguments names the test's id.
func (h *pipeHook) mine(cmd redis.Cmder) bool {
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.Contains(s, h.id) {
			return true
		}
	}
	return false
}

func (h *pipeHook) recorded() (sizes []int, loads int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sizes), h.loads
}

func (h *pipeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *pipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && cmd.Name() == "script" && h.mine(cmd) {
			if sub, _ := args[1].(string); strings.EqualFold(sub, "load") {
				h.mu.Lock()
				h.loads++
				h.mu.Unlock()
			}
		}
		return next(ctx, cmd)
	}
}

func (h *pipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, h.mine) {
			return next(ctx, cmds)
		}
		h.mu.Lock()
		h.sizes = append(h.sizes, len(cmds))
		first := len(h.sizes) == 1
		h.mu.Unlock()
		if first && h.hold {
			close(h.entered)
			<-h.gate
		}
		return next(ctx, cmds)
	}
}

// waitPending waits, up to a deadline, until n calls are queued in b.
func waitPending(t *testing.T, b *batcher, n int) {
	t.Helper()
	// A tight pace: the queue is in memory, and asking it costs nothing.
	eventually.OKEvery(t, 10*time.Second, 100*time.Microsecond, func() error {
		if got := b.q.Pending(); got != n {
			return fmt.Errorf("%d calls queued, want %d", got, n)
		}
		return nil
	})
}

// holdFirst sends one INCR through b and returns once its pipeline is held in h's hook (the only
// lane is then in flight); wait returns that call's error after the hook is released.
func holdFirst(t *testing.T, b *batcher, h *pipeHook) (wait func() error) {
	t.Helper()
	cmd := redis.NewIntCmd(context.Background(), "incr", h.key(t, b.rdb, "first"))
	errc := make(chan error, 1)
	go func() { errc <- b.do(context.Background(), cmd, nil) }()
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first call's pipeline never reached the hook")
	}
	return func() error {
		if err := <-errc; err != nil {
			return err
		}
		if cmd.Val() != 1 {
			return fmt.Errorf("first INCR answered %d, want 1", cmd.Val())
		}
		return nil
	}
}

// TestBatchLoneCallGoesAlone proves a call that finds a lane idle is sent at once in a pipeline of
// its own: each of three sequential calls makes its own one-command pipeline.
func TestBatchLoneCallGoesAlone(t *testing.T) {
	t.Parallel()
	b, h := newPipeHook(t, DefaultBatchMax, 1, false)
	ctx := context.Background()
	k := h.key(t, b.rdb, "n")
	for i := 1; i <= 3; i++ {
		cmd := redis.NewIntCmd(ctx, "incr", k)
		if err := b.do(ctx, cmd, nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if cmd.Val() != int64(i) {
			t.Fatalf("call %d: INCR = %d, want %d", i, cmd.Val(), i)
		}
	}
	if sizes, _ := h.recorded(); !slices.Equal(sizes, []int{1, 1, 1}) {
		t.Errorf("pipeline sizes %v, want [1 1 1]", sizes)
	}
}

// sendQueued sends n calls (call(i) gives each command and its script) while the first pipeline is
// held, so that all of them queue behind it, then releases it and fails on any call's error.
func sendQueued(t *testing.T, b *batcher, h *pipeHook, wait func() error, call func(i int) (redis.Cmder, *redis.Script), n int) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cmd, sc := call(i)
		wg.Go(func() { errs[i] = b.do(context.Background(), cmd, sc) })
	}
	waitPending(t, b, n)
	h.release()
	wg.Wait()
	if err := wait(); err != nil {
		t.Fatalf("first call: %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

// queueBehindHeld holds the only lane's first pipeline, queues n INCRBY calls on distinct keys
// behind it, releases it, and checks every call got its own answer and its key its own value.
// It returns the sizes of the pipelines sent.
func queueBehindHeld(t *testing.T, maxCmds, n int) []int {
	t.Helper()
	b, h := newPipeHook(t, maxCmds, 1, true)
	ctx := context.Background()
	wait := holdFirst(t, b, h)

	keys := make([]string, n)
	cmds := make([]*redis.IntCmd, n)
	for i := range n {
		keys[i] = h.key(t, b.rdb, "k"+strconv.Itoa(i))
		cmds[i] = redis.NewIntCmd(ctx, "incrby", keys[i], i+1)
	}
	sendQueued(t, b, h, wait, func(i int) (redis.Cmder, *redis.Script) { return cmds[i], nil }, n)

	for i, cmd := range cmds {
		if cmd.Val() != int64(i+1) {
			t.Errorf("call %d: INCRBY answered %d, want %d", i, cmd.Val(), i+1)
		}
		if v, err := b.rdb.Get(ctx, keys[i]).Int(); err != nil || v != i+1 {
			t.Errorf("key %d = %d (%v), want %d", i, v, err, i+1)
		}
	}
	sizes, _ := h.recorded()
	return sizes
}

// TestBatchQueuedCallsShareOnePipeline proves calls arriving while the only lane is in flight go
// out together in the next pipeline, each with its own answer.
func TestBatchQueuedCallsShareOnePipeline(t *testing.T) {
	t.Parallel()
	const n = 10
	if sizes := queueBehindHeld(t, DefaultBatchMax, n); !slices.Equal(sizes, []int{1, n}) {
		t.Errorf("pipeline sizes %v, want [1 %d]", sizes, n)
	}
}

// TestBatchRespectsMax proves a queue longer than max goes out in pipelines of at most max
// commands.
func TestBatchRespectsMax(t *testing.T) {
	t.Parallel()
	if sizes := queueBehindHeld(t, 4, 10); !slices.Equal(sizes, []int{1, 4, 4, 2}) {
		t.Errorf("pipeline sizes %v, want [1 4 4 2]", sizes)
	}
}

// TestBatchCancelledWhileQueuedIsNotSent proves a call whose context ends while it is queued
// returns context.Canceled and is never sent: its INCR does not run, and the pipeline it would
// have joined carries only the call queued after it.
func TestBatchCancelledWhileQueuedIsNotSent(t *testing.T) {
	t.Parallel()
	b, h := newPipeHook(t, DefaultBatchMax, 1, true)
	wait := holdFirst(t, b, h)

	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelledKey := h.key(t, b.rdb, "cancelled")
	cancelled := redis.NewIntCmd(cctx, "incr", cancelledKey)
	cancelledErr := make(chan error, 1)
	go func() { cancelledErr <- b.do(cctx, cancelled, nil) }()
	waitPending(t, b, 1)

	ctx := context.Background()
	later := redis.NewIntCmd(ctx, "incr", h.key(t, b.rdb, "later"))
	laterErr := make(chan error, 1)
	go func() { laterErr <- b.do(ctx, later, nil) }()
	waitPending(t, b, 2)

	cancel()
	if err := <-cancelledErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call returned %v, want context.Canceled", err)
	}
	h.release()
	if err := wait(); err != nil {
		t.Fatalf("first call: %v", err)
	}
	// The lane skips the cancelled call before it sends the later one, so once the later call is
	// answered the cancelled one has been dealt with.
	if err := <-laterErr; err != nil || later.Val() != 1 {
		t.Fatalf("later call: INCR = %d, %v; want 1", later.Val(), err)
	}
	if err := cancelled.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled command's error %v, want context.Canceled", err)
	}
	if n, err := b.rdb.Exists(ctx, cancelledKey).Result(); err != nil || n != 0 {
		t.Errorf("cancelled INCR ran: EXISTS = %d (%v), want 0", n, err)
	}
	if sizes, _ := h.recorded(); !slices.Equal(sizes, []int{1, 1}) {
		t.Errorf("pipeline sizes %v, want [1 1]", sizes)
	}
}

// TestBatchLoadsScriptOnNoScript proves EVALSHA calls of a script Redis has never seen (its body
// carries the test's unique id) are answered NOSCRIPT, then the batcher loads the script once and
// retries them together, and every call returns the script's right answer.
func TestBatchLoadsScriptOnNoScript(t *testing.T) {
	t.Parallel()
	const n = 3
	b, h := newPipeHook(t, DefaultBatchMax, 1, true)
	ctx := context.Background()
	sc := redis.NewScript("-- " + h.id + "\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])")
	if ok, err := sc.Exists(ctx, b.rdb).Result(); err != nil || len(ok) != 1 || ok[0] {
		t.Fatalf("SCRIPT EXISTS of a new script = %v (%v), want [false]", ok, err)
	}
	wait := holdFirst(t, b, h)

	cmds := make([]*redis.Cmd, n)
	for i := range n {
		cmds[i] = redis.NewCmd(ctx, "evalsha", sc.Hash(), 1, h.key(t, b.rdb, "s"+strconv.Itoa(i)), 10+i)
	}
	sendQueued(t, b, h, wait, func(i int) (redis.Cmder, *redis.Script) { return cmds[i], sc }, n)

	for i, cmd := range cmds {
		if v, err := cmd.Int(); err != nil || v != 10+i {
			t.Errorf("call %d: script answered %d (%v), want %d", i, v, err, 10+i)
		}
	}
	// The held INCR, the EVALSHA pipeline answered NOSCRIPT, then its retry.
	if sizes, loads := h.recorded(); !slices.Equal(sizes, []int{1, n, n}) || loads != 1 {
		t.Errorf("pipeline sizes %v and %d SCRIPT LOADs, want [1 %d %d] and 1", sizes, loads, n, n)
	}
}

// TestScriptCallSplitsBack: a call line's keys and arguments come back apart as they went in, for
// the ways of running a script (WAIT on one connection, Script.Run) that take them apart.
func TestScriptCallSplitsBack(t *testing.T) {
	keys, args := []string{"{fs:s:i}:meta", "{fs:s:i}:stock"}, []any{"user", int64(3), ""}
	c := newScriptCall("sha", len(keys), len(args))
	for _, k := range keys {
		c = append(c, k)
	}
	c = append(c, args...)
	if c[0] != "evalsha" || c[1] != "sha" || c[2] != 2 {
		t.Fatalf("call line %v, want evalsha, the hash, the key count first", c)
	}
	if !slices.Equal(c.keys(), keys) || !slices.Equal(c.args(), args) {
		t.Errorf("split into %v and %v, want %v and %v", c.keys(), c.args(), keys, args)
	}
}
