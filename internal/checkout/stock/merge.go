package stock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The reserve script's call line (lua/reserve.lua): the shard's keys and the call's own arguments
// first, then each attempt's keys and arguments.
const (
	reserveSharedKeys = 6 // meta, stock, buyers, holds, orders, applied
	reserveSharedArgs = 4 // idempotency TTL, incoming transfer id, its units, order references' TTL
)

// reserveAnswer reads the answer of a reserve call of one attempt.
func reserveAnswer(cmd *redis.Cmd) (string, error) {
	answers, err := cmd.StringSlice()
	if err != nil {
		return "", err
	}
	if len(answers) != 1 {
		return "", fmt.Errorf("reserve script gave %d answers to one attempt", len(answers))
	}
	return answers[0], nil
}

// mergedReserve is the one call that carries the reserves of one shard met in a pipeline.
type mergedReserve struct {
	call  *batchCall
	parts []*batchCall
}

// mergeReserves gives the batch's commands to send: each call as it is, except the reserves of one
// shard, which go as one call of the script for all their attempts, in their order (merged): Redis
// reads the sale's settings, the clock and the counter once a call, which took its CPU for a sold-out
// answer to 0.64x and for a fresh reservation to 0.84x (BenchmarkRedisReserveMerged,
// docs/benchmarks.md). Only a reserve that brings no transfer is merged: a transfer is applied by the
// call that carries it, before its attempt.
func (b *batcher) mergeReserves(ctx context.Context, batch []*batchCall) (send []*batchCall, merged []*mergedReserve) {
	var byShard map[any]*mergedReserve
	for _, c := range batch {
		group, ok := b.shardOf(c)
		if !ok {
			send = append(send, c)
			continue
		}
		if m := byShard[group]; m != nil {
			m.parts = append(m.parts, c)
			continue
		}
		if byShard == nil {
			byShard = map[any]*mergedReserve{}
		}
		m := &mergedReserve{call: &batchCall{script: b.reserve}, parts: []*batchCall{c}}
		byShard[group] = m
		merged = append(merged, m)
		send = append(send, m.call)
	}
	for _, m := range merged {
		if len(m.parts) == 1 { // alone: sent as it came
			m.call.cmd = m.parts[0].cmd
			continue
		}
		lines := make([][]any, len(m.parts))
		for i, p := range m.parts {
			lines[i] = p.cmd.Args()
		}
		m.call.cmd = redis.NewCmd(ctx, mergeReserveCalls(lines)...)
	}
	return send, merged
}

// shardOf names the shard of a reserve call that may be merged (its meta key and its attempts'
// key count); false for any other command.
func (b *batcher) shardOf(c *batchCall) (any, bool) {
	if b.reserve == nil || c.script != b.reserve {
		return nil, false
	}
	line := c.cmd.Args()
	nkeys, ok := line[2].(int)
	if !ok || len(line) < 3+nkeys+reserveSharedArgs || nkeys <= reserveSharedKeys {
		return nil, false
	}
	if transfer, _ := line[3+nkeys+1].(string); transfer != "" {
		return nil, false
	}
	return [2]any{line[3], nkeys}, true
}

// mergeReserveCalls builds the reserve call of several attempts on one shard out of their own call
// lines, which share the shard's keys and the call's arguments.
func mergeReserveCalls(lines [][]any) []any {
	first := lines[0]
	nkeys := first[2].(int)
	perKeys := nkeys - reserveSharedKeys
	perArgs := len(first) - 3 - nkeys - reserveSharedArgs
	out := make([]any, 0, 3+reserveSharedKeys+reserveSharedArgs+len(lines)*(perKeys+perArgs))
	out = append(out, first[0], first[1], reserveSharedKeys+len(lines)*perKeys)
	out = append(out, first[3:3+reserveSharedKeys]...)
	for _, l := range lines {
		out = append(out, l[3+reserveSharedKeys:3+nkeys]...)
	}
	out = append(out, first[3+nkeys:3+nkeys+reserveSharedArgs]...)
	for _, l := range lines {
		out = append(out, l[3+nkeys+reserveSharedArgs:]...)
	}
	return out
}

// answer gives each attempt of a merged call its own answer, as a call of its own would have had it:
// its answer alone, or the call's error.
func (m *mergedReserve) answer() {
	if len(m.parts) == 1 {
		return
	}
	answers, err := m.call.cmd.(*redis.Cmd).Slice()
	if err == nil && len(answers) != len(m.parts) {
		err = fmt.Errorf("reserve script gave %d answers to %d attempts", len(answers), len(m.parts))
	}
	for i, p := range m.parts {
		cmd := p.cmd.(*redis.Cmd)
		if err != nil {
			cmd.SetErr(err)
			continue
		}
		cmd.SetVal([]any{answers[i]})
	}
}
