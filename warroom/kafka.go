package warroom

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// KafkaPipeline reads the order consumer group's lag per partition of the orders topic (end offset
// minus committed offset) and the dead-letter topic's size, with admin requests only.
type KafkaPipeline struct {
	Brokers         []string
	Topic           string
	DeadLetterTopic string
	Group           string
	client          *kafka.Client
}

// NewKafkaPipeline returns the pipeline source.
func NewKafkaPipeline(brokers []string, topic, deadLetterTopic, group string) *KafkaPipeline {
	return &KafkaPipeline{Brokers: brokers, Topic: topic, DeadLetterTopic: deadLetterTopic, Group: group,
		client: &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 2 * time.Second}}
}

// Pipeline returns the lag and dead-letter count.
func (k *KafkaPipeline) Pipeline(ctx context.Context) (Pipeline, error) {
	p := Pipeline{Topic: k.Topic, Group: k.Group}
	parts, err := k.partitions(ctx, k.Topic)
	if err != nil {
		return p, err
	}
	ends, err := k.ends(ctx, k.Topic, parts)
	if err != nil {
		return p, err
	}
	off, err := k.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: k.Group, Topics: map[string][]int{k.Topic: parts}})
	if err != nil {
		return p, fmt.Errorf("kafka committed offsets of %s: %w", k.Group, err)
	}
	if off.Error != nil {
		return p, fmt.Errorf("kafka committed offsets of %s: %w", k.Group, off.Error)
	}
	committed := map[int]int64{}
	for _, c := range off.Topics[k.Topic] {
		committed[c.Partition] = c.CommittedOffset
	}
	for _, id := range parts {
		c := committed[id]
		end := ends[id]
		lag := end - max(c, 0) // -1: nothing committed yet, the group starts from the first offset
		p.Partitions = append(p.Partitions, PartitionLag{Partition: id, End: end, Committed: c, Lag: max(lag, 0)})
		p.Lag += max(lag, 0)
	}
	if k.DeadLetterTopic != "" {
		dparts, err := k.partitions(ctx, k.DeadLetterTopic)
		if err != nil {
			return p, err
		}
		dends, err := k.ends(ctx, k.DeadLetterTopic, dparts)
		if err != nil {
			return p, err
		}
		for _, e := range dends {
			p.DeadLetters += e
		}
	}
	return p, nil
}

func (k *KafkaPipeline) partitions(ctx context.Context, topic string) ([]int, error) {
	md, err := k.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("kafka metadata of %s: %w", topic, err)
	}
	for _, t := range md.Topics {
		if t.Name == topic {
			if t.Error != nil {
				return nil, fmt.Errorf("kafka topic %s: %w", topic, t.Error)
			}
			ids := make([]int, len(t.Partitions))
			for i, p := range t.Partitions {
				ids[i] = p.ID
			}
			return ids, nil
		}
	}
	return nil, fmt.Errorf("kafka topic %s not found", topic)
}

// ends returns the end offset of each partition: the number of messages ever written to it.
func (k *KafkaPipeline) ends(ctx context.Context, topic string, parts []int) (map[int]int64, error) {
	reqs := make([]kafka.OffsetRequest, 0, len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafka.LastOffsetOf(p))
	}
	res, err := k.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("kafka end offsets of %s: %w", topic, err)
	}
	out := make(map[int]int64, len(parts))
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("kafka end offset of %s/%d: %w", topic, po.Partition, po.Error)
		}
		out[po.Partition] = po.LastOffset
	}
	return out, nil
}
