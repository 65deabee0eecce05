package gameday

import (
	"context"
	"fmt"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// waitConsumers waits until every instance's order consumer has joined the group and the group is
// stable. Preflight is satisfied by one member; the burst must not start while the group is still
// rebalancing (a fresh broker, or the members of an earlier run that are only now timing out), or
// the first buyers' orders wait for it and their payments answer ORDER_NOT_RECORDED_YET.
func (r *run) waitConsumers(ctx context.Context, want int, timeout time.Duration) (string, error) {
	c, closeIdle, err := kafkaconn.NewClient(kafkaconn.EnvFor(r.env.Endpoints.KafkaBrokers), 3*time.Second)
	if err != nil {
		return "", err
	}
	defer closeIdle()
	deadline := r.cfg.Now().Add(timeout)
	var last string
	for {
		g, err := kafkaconn.GroupLag(ctx, c, events.DefaultOrdersTopic, events.DefaultConsumerGroup)
		switch {
		case err != nil:
			last = err.Error()
		case g.State == "Stable" && g.Members >= want: // more: consumers this run did not start, e.g. an operator's serve
			return fmt.Sprintf("consumer group %s stable with %d member(s), lag %d", g.Group, g.Members, g.Lag), nil
		default:
			last = fmt.Sprintf("%s with %d of %d member(s)", g.State, g.Members, want)
		}
		if r.cfg.Now().After(deadline) {
			return "", fmt.Errorf("consumer group %s not ready after %s: %s", events.DefaultConsumerGroup, timeout, last)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return "", err
		}
	}
}
