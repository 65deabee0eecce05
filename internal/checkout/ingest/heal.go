package ingest

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"
)

// healAfter is how long a consumer waits for a message before it checks that the group's
// committed offsets are not behind what it recorded (heal).
const healAfter = 5 * time.Second

// heal moves forward the group's committed offset of each partition this consumer recorded past
// it. A member's commit carries the group's current generation, not the one its batch was fetched
// in, and Kafka takes it from any member of the generation: a commit that waited out a rebalance
// (a broker frozen, then back) set a partition another member had read on since back to an older
// offset. That owner, idle with the sale over, never committed again, and the group lagged by a
// thousand messages it had recorded (chaos seeds 9 and 17: settle waited 3 minutes). A committed
// offset up to what this consumer recorded is true whoever owns the partition now, so each member
// puts its own part back, and only ever forward.
func (c *Consumer) heal(ctx context.Context) {
	if len(c.recorded) == 0 {
		return
	}
	hctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	parts := make([]int, 0, len(c.recorded))
	for p := range c.recorded {
		parts = append(parts, p)
	}
	res, err := c.client.OffsetFetch(hctx, &kafka.OffsetFetchRequest{GroupID: c.cfg.GroupID, Topics: map[string][]int{c.cfg.Topic: parts}})
	if err == nil {
		err = res.Error
	}
	if err != nil {
		c.log.Debug("reading the group's offsets failed; heal them next time", "err", err)
		return
	}
	committed := map[int]int64{}
	for _, p := range res.Topics[c.cfg.Topic] {
		if p.Error == nil {
			committed[p.Partition] = p.CommittedOffset
		}
	}
	var behind []kafka.Message
	for _, p := range parts {
		if at, ok := committed[p]; ok && at < c.recorded[p] {
			behind = append(behind, kafka.Message{Topic: c.cfg.Topic, Partition: p, Offset: c.recorded[p] - 1})
		}
	}
	if len(behind) == 0 {
		return
	}
	if err := c.reader.CommitMessages(hctx, behind...); err != nil {
		c.log.Debug("healing the group's offsets failed; try again next time", "err", err)
		return
	}
	for _, m := range behind {
		c.log.Warn("the group's committed offset was behind what this consumer recorded (a late commit set it back); moved it forward",
			"partition", m.Partition, "was", committed[m.Partition], "now", m.Offset+1)
	}
}
