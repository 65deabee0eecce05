package kafkaconn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
)

// NewClient is a Kafka client for reading offsets, lags and metadata, each call within timeout,
// on a transport of its own: kafka-go's default one is shared by the process and caches metadata
// for seconds, so it would call a topic created moments ago unknown. closeIdle releases its
// connections.
func NewClient(conn Conn, timeout time.Duration) (c *kafka.Client, closeIdle func(), err error) {
	return conn.Client(timeout)
}

// GroupState is how far a consumer group is behind on one topic.
type GroupState struct {
	Group   string `json:"group"`
	State   string `json:"state"`
	Members int    `json:"members"`
	// Lag is the messages not yet committed, over all partitions; Partitions has each one's, in
	// partition order.
	Lag        int64          `json:"lag"`
	Partitions []PartitionLag `json:"partitions"`
}

// PartitionLag is one partition of a consumer group's topic.
type PartitionLag struct {
	Partition int `json:"partition"`
	// End is the next offset to be written; Committed the group's position (-1: none yet).
	End       int64 `json:"end"`
	Committed int64 `json:"committed"`
	Lag       int64 `json:"lag"`
}

// Offsets are the first and next offsets of each partition of a topic.
type Offsets struct {
	First, End map[int]int64
}

// Messages is how many messages the topic holds (end − first, summed).
func (o Offsets) Messages() int64 {
	var n int64
	for p, end := range o.End {
		n += max(end-o.First[p], 0)
	}
	return n
}

// TopicOffsets reads the first and end offsets of every partition of topic.
func TopicOffsets(ctx context.Context, c *kafka.Client, topic string) (Offsets, error) {
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return Offsets{}, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	if len(meta.Topics) != 1 || meta.Topics[0].Error != nil {
		var terr error
		if len(meta.Topics) == 1 {
			terr = meta.Topics[0].Error
		}
		return Offsets{}, fmt.Errorf("topic %s: %v", topic, terr)
	}
	var req []kafka.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		req = append(req, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	res, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: req}})
	if err != nil {
		return Offsets{}, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	o := Offsets{First: map[int]int64{}, End: map[int]int64{}}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			return Offsets{}, fmt.Errorf("offsets of %s/%d: %w", topic, p.Partition, p.Error)
		}
		o.First[p.Partition], o.End[p.Partition] = p.FirstOffset, p.LastOffset
	}
	return o, nil
}

// GroupLag describes a consumer group and sums how far its committed offsets are behind the end
// of topic; a partition it never committed counts from its first offset.
func GroupLag(ctx context.Context, c *kafka.Client, topic, group string) (GroupState, error) {
	g := GroupState{Group: group}
	var desc *kafka.DescribeGroupsResponse
	err := whileLoading(ctx, func() error {
		var err error
		desc, err = c.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		if err == nil && len(desc.Groups) == 1 {
			err = desc.Groups[0].Error
		}
		return err
	})
	if err != nil {
		return g, fmt.Errorf("describe group %s: %w", group, err)
	}
	g.State, g.Members = desc.Groups[0].GroupState, len(desc.Groups[0].Members)
	offs, err := TopicOffsets(ctx, c, topic)
	if err != nil {
		return g, err
	}
	parts := slices.Sorted(maps.Keys(offs.End))
	var committed *kafka.OffsetFetchResponse
	err = whileLoading(ctx, func() error {
		var err error
		committed, err = c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
		if err == nil {
			err = committed.Error
		}
		return err
	})
	if err != nil {
		return g, fmt.Errorf("offsets of group %s: %w", group, err)
	}
	pos := map[int]int64{}
	for _, cp := range committed.Topics[topic] {
		pos[cp.Partition] = cp.CommittedOffset
	}
	for _, p := range parts {
		end := offs.End[p]
		at, ok := pos[p]
		if !ok {
			at = -1
		}
		from := at
		if from < 0 {
			from = offs.First[p]
		}
		lag := max(end-from, 0)
		g.Partitions = append(g.Partitions, PartitionLag{Partition: p, End: end, Committed: at, Lag: lag})
		g.Lag += lag
	}
	return g, nil
}

// whileLoading repeats fn, for up to 5 s within ctx, while the group's coordinator answers that it
// is still loading or moving (a fresh cluster, a broker that just took the offsets partition over):
// a state of seconds that says nothing about the group.
func whileLoading(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := fn()
		if !errors.Is(err, kafka.GroupLoadInProgress) && !errors.Is(err, kafka.GroupCoordinatorNotAvailable) &&
			!errors.Is(err, kafka.NotCoordinatorForGroup) {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
