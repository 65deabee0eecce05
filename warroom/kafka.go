package warroom

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// KafkaPipeline reads the order consumer group's lag per partition of the orders topic (end offset
// minus committed offset) and the dead-letter topic's size, with admin requests only.
type KafkaPipeline struct {
	Kafka           kafkaconn.Conn
	Topic           string
	DeadLetterTopic string
	Group           string
	client          *kafka.Client
	closeIdle       func()
}

// NewKafkaPipeline returns the pipeline source. It has its own transport: kafka-go's default one
// is shared by the whole process and caches the cluster's topics for seconds, so a topic created
// after any other Kafka use in the process would read as unknown.
func NewKafkaPipeline(conn kafkaconn.Conn, topic, deadLetterTopic, group string) (*KafkaPipeline, error) {
	client, closeIdle, err := conn.Client(2 * time.Second)
	if err != nil {
		return nil, err
	}
	return &KafkaPipeline{Kafka: conn, Topic: topic, DeadLetterTopic: deadLetterTopic, Group: group, client: client, closeIdle: closeIdle}, nil
}

// Close closes the pipeline's idle connections to the brokers.
func (k *KafkaPipeline) Close() { k.closeIdle() }

// Pipeline returns the lag and dead-letter count.
func (k *KafkaPipeline) Pipeline(ctx context.Context) (Pipeline, error) {
	p := Pipeline{Topic: k.Topic, Group: k.Group}
	g, err := kafkaconn.GroupLag(ctx, k.client, k.Topic, k.Group)
	if err != nil {
		return p, err
	}
	p.Partitions, p.Lag = g.Partitions, g.Lag
	if k.DeadLetterTopic != "" {
		offs, err := kafkaconn.TopicOffsets(ctx, k.client, k.DeadLetterTopic)
		if err != nil {
			return p, err
		}
		p.DeadLetters = offs.Messages()
	}
	return p, nil
}
