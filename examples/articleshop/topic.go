package articleshop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/segmentio/kafka-go"
)

// topicPartitions is the partition count of a topic Open creates; keys are item ids, so more
// partitions spread items, while one item's orders stay ordered on one partition.
const topicPartitions = 3

// ensureTopic creates the order topic if it is missing, like the article's Spring `NewTopic` bean
// does through KafkaAdmin at start: the brokers run with auto-creation off, and without the topic
// every purchase would be compensated and answered 503. An existing topic is left as it is.
func ensureTopic(ctx context.Context, brokers []string, topic string) error {
	var conn *kafka.Conn
	var errs []error
	for _, b := range brokers {
		c, err := kafka.DialContext(ctx, "tcp", b)
		if err == nil {
			conn = c
			break
		}
		errs = append(errs, err)
	}
	if conn == nil {
		return fmt.Errorf("articleshop: kafka: %w", errors.Join(errs...))
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		return fmt.Errorf("articleshop: kafka controller: %w", err)
	}
	cc, err := kafka.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return fmt.Errorf("articleshop: kafka controller: %w", err)
	}
	defer cc.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = cc.SetDeadline(deadline)
	}
	// CreateTopics treats "already exists" as success, so this is safe at every start.
	err = cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: topicPartitions, ReplicationFactor: 1})
	if err != nil {
		return fmt.Errorf("articleshop: create topic %s: %w", topic, err)
	}
	return nil
}
