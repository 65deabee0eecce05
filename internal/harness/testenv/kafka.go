package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// KafkaBrokers returns the brokers of FSCTL_KAFKA_BROKERS after checking that one answers a
// metadata request.
func KafkaBrokers(tb testing.TB) []string {
	tb.Helper()
	skipShort(tb)
	brokers := stack.EndpointsFromEnv().KafkaBrokers
	if _, err := dialAny(brokers); err != nil {
		unreachable(tb, "kafka", strings.Join(brokers, ","), err, stack.EnvKafkaBrokers, "`make stack-up`")
	}
	return brokers
}

// Kafka is the connection to KafkaBrokers, plain as the local stack's (tests of secured brokers
// build theirs from SecureStack).
func Kafka(tb testing.TB) kafkaconn.Conn {
	tb.Helper()
	return kafkaconn.Conn{Brokers: KafkaBrokers(tb)}
}

// KafkaTopic creates a topic named fsctl-t-<random hex> with the given number of partitions and
// replication factor 1, waits until every partition has a leader (so the first produce does not
// race the topic's creation), and deletes the topic when the test ends.
func KafkaTopic(tb testing.TB, partitions int) string {
	tb.Helper()
	return KafkaTopicOn(tb, KafkaBrokers(tb), partitions)
}

// KafkaClusterBrokers returns the local replicated Kafka's brokers (FSCTL_KAFKA_CLUSTER_BROKERS;
// `fsctl stack up --kafka-cluster 3`, which make test runs) after checking that one answers.
func KafkaClusterBrokers(tb testing.TB) []string {
	tb.Helper()
	skipShort(tb)
	brokers := stack.EndpointsFromEnv().KafkaClusterBrokers
	if _, err := dialAny(brokers); err != nil {
		unreachable(tb, "kafka cluster", strings.Join(brokers, ","), err, stack.EnvKafkaClusterBrokers, "`fsctl stack up --kafka-cluster 3` (make test does)")
	}
	return brokers
}

// KafkaTopicOn is KafkaTopic on the given brokers: on a cluster of three or more the topic is
// replicated three ways with min.insync.replicas 2, as a production orders topic is.
func KafkaTopicOn(tb testing.TB, brokers []string, partitions int) string {
	tb.Helper()
	if partitions < 1 {
		tb.Fatalf("KafkaTopic: partitions must be at least 1, got %d", partitions)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("random topic name: %v", err)
	}
	topic := "fsctl-t-" + hex.EncodeToString(b[:])
	tc := kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}
	if len(brokers) >= 3 {
		tc.ReplicationFactor = 3
		tc.ConfigEntries = []kafka.ConfigEntry{{ConfigName: "min.insync.replicas", ConfigValue: "2"}}
	}
	// Topics are created and deleted through the controller; any broker forwards to it in KRaft,
	// but asking the one the cluster names works on older clusters too.
	err := withController(brokers, func(c *kafka.Conn) error { return c.CreateTopics(tc) })
	if err != nil {
		tb.Fatalf("create topic %s: %v", topic, err)
	}
	tb.Cleanup(func() {
		if err := withController(brokers, func(c *kafka.Conn) error { return c.DeleteTopics(topic) }); err != nil {
			tb.Errorf("delete topic %s: %v", topic, err)
		}
	})
	eventually.OK(tb, 30*time.Second, func() error {
		if err := leadersElected(brokers, topic, partitions); err != nil {
			return fmt.Errorf("topic %s: no leader for every partition: %w", topic, err)
		}
		return nil
	})
	return topic
}

func dialAny(brokers []string) (*kafka.Conn, error) {
	if len(brokers) == 0 {
		return nil, errors.New("no brokers configured")
	}
	var errs []error
	for _, addr := range brokers {
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
		conn, err := kafka.DialContext(ctx, "tcp", addr)
		cancel()
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(dialTimeout))
			if _, err = conn.Brokers(); err == nil {
				_ = conn.SetDeadline(time.Time{})
				return conn, nil
			}
			conn.Close()
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return nil, errors.Join(errs...)
}

func withController(brokers []string, fn func(*kafka.Conn) error) error {
	conn, err := dialAny(brokers)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		return fmt.Errorf("find controller: %w", err)
	}
	cc, err := kafka.Dial("tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return fmt.Errorf("dial controller: %w", err)
	}
	defer cc.Close()
	_ = cc.SetDeadline(time.Now().Add(30 * time.Second))
	return fn(cc)
}

// leadersElected returns nil once the metadata shows all the partitions of topic, each with a
// leader, and otherwise what is still missing.
func leadersElected(brokers []string, topic string, partitions int) error {
	conn, err := dialAny(brokers)
	if err != nil {
		return err
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		return err
	}
	if len(parts) != partitions {
		return fmt.Errorf("%d of %d partitions in metadata", len(parts), partitions)
	}
	for _, p := range parts {
		if p.Error != nil {
			return fmt.Errorf("partition %d: %w", p.ID, p.Error)
		}
		if p.Leader.Host == "" {
			return fmt.Errorf("partition %d has no leader yet", p.ID)
		}
	}
	return nil
}
