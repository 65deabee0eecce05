package preflight

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/control"
	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// checkControls: no kill switch is thrown, and the sale and its room are paused exactly when the
// operator expects them to be — in PostgreSQL and in every shard's Redis settings alike.
func checkControls(ctx context.Context, e *env) []finding.Finding {
	if e.rdb == nil {
		return needs("controls", "Redis")
	}
	out := []finding.Finding{switches(ctx, e)}
	sl := e.bundled.sale
	if sl == nil {
		return out
	}
	out = append(out, salePause(ctx, e, *sl))
	if sl.Room.Enabled {
		out = append(out, roomPause(ctx, e, *sl))
	}
	return out
}

func switches(ctx context.Context, e *env) finding.Finding {
	r := finding.Finding{Group: "controls", Check: "kill switches"}
	state, err := control.NewStore(e.rdb, e.cfg.SwitchesKey).Get(ctx)
	if err != nil {
		r.Status, r.Detail = finding.Fail, err.Error()
		return r
	}
	var thrown []string
	for _, n := range control.Names {
		if state[n] {
			thrown = append(thrown, n)
		}
	}
	if len(thrown) > 0 {
		r.Status, r.Detail = finding.Fail, "thrown: "+strings.Join(thrown, ", ")
		r.Fix = `reset each: PUT /admin/v1/switches/NAME {"off": false}`
		return r
	}
	r.Status, r.Detail = finding.Pass, "none thrown ("+strings.Join(control.Names, ", ")+")"
	return r
}

func (e *env) pauseWord(paused bool) string {
	if paused {
		return "paused"
	}
	return "running"
}

func salePause(ctx context.Context, e *env, sl sale.Sale) finding.Finding {
	r := finding.Finding{Group: "controls", Check: "sale pause"}
	pipe := e.rdb.Pipeline()
	var flags []*redis.StringCmd
	var where []string
	for _, it := range sl.Items {
		for k := range it.ShardCount() {
			flags = append(flags, pipe.HGet(ctx, stock.ShardKeys(sl.ID, it.ID, k, it.ShardCount()).Meta(), "paused"))
			where = append(where, fmt.Sprintf("%s/%d", it.ID, k))
		}
	}
	_, _ = pipe.Exec(ctx) // a missing meta is reported by the stock check; read what is there
	var disagree []string
	for i, f := range flags {
		if v, err := f.Result(); err == nil && (v == "1") != sl.Paused {
			disagree = append(disagree, where[i])
		}
	}
	if len(disagree) > 0 {
		r.Status = finding.Fail
		r.Detail = fmt.Sprintf("PostgreSQL says %s, Redis says otherwise on shard(s) %s", e.pauseWord(sl.Paused), strings.Join(disagree, ", "))
		r.Fix = fmt.Sprintf("POST /admin/v1/sales/%s/pause or /resume again: it writes both", sl.ID)
		return r
	}
	return expectPause(r, e, sl.Paused, fmt.Sprintf("POST /admin/v1/sales/%s/resume", sl.ID), fmt.Sprintf("POST /admin/v1/sales/%s/pause", sl.ID))
}

func roomPause(ctx context.Context, e *env, sl sale.Sale) finding.Finding {
	r := finding.Finding{Group: "controls", Check: "room admissions"}
	rdb := e.roomClient()
	if rdb == nil {
		r.Status, r.Detail = finding.Skip, "the room's Redis is unreachable"
		return r
	}
	st, err := room.New(rdb).Stats(ctx, sl.ID)
	if err != nil {
		r.Status, r.Detail = finding.Warn, err.Error()
		r.Fix = "the servers set the room up when they start: start them"
		return r
	}
	if st.Paused != sl.Room.Paused {
		r.Status = finding.Fail
		r.Detail = fmt.Sprintf("PostgreSQL says admissions %s, the room says %s", e.pauseWord(sl.Room.Paused), e.pauseWord(st.Paused))
		r.Fix = fmt.Sprintf("PUT /admin/v1/sales/%s/room again: it writes both", sl.ID)
		return r
	}
	r = expectPause(r, e, st.Paused, fmt.Sprintf(`PUT /admin/v1/sales/%s/room {"paused": false}`, sl.ID),
		fmt.Sprintf(`PUT /admin/v1/sales/%s/room {"paused": true}`, sl.ID))
	r.Detail += fmt.Sprintf(", %.0f buyers/s, %d waiting, %d active", st.Rate, st.Depth, st.Active)
	return r
}

// expectPause compares a pause flag with what the operator expects (--expect-paused).
func expectPause(r finding.Finding, e *env, paused bool, resume, pause string) finding.Finding {
	r.Detail = e.pauseWord(paused)
	switch {
	case paused == e.cfg.ExpectPaused:
		r.Status = finding.Pass
	case paused:
		r.Status, r.Fix = finding.Fail, resume+" (or pass --expect-paused if you open it by hand)"
	default:
		r.Status, r.Fix = finding.Fail, pause+" (or drop --expect-paused)"
	}
	return r
}
