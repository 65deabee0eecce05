package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// Publisher writes events to Kafka. It is safe for concurrent use: concurrent publishes to one
// partition share produce requests (see groupProducer), and each call returns once its message is
// acknowledged by all in-sync replicas (acks=all) or has failed.
type Publisher struct {
	topic     string
	transport *kafka.Transport
	g         *groupProducer
	conn      kafkaconn.Conn // explains a failed publish
}

// NewPublisher returns a publisher to topic through conn; an error is a connection that is wrong
// in form (a CA file that does not load).
//
// Each publisher has its own transport: kafka-go's shared default transport caches topic metadata
// for 6 s, so a topic created after another writer's first request looked missing for that long.
// Temporary broker errors (leader moves, a partition not ready yet) are retried inside the
// caller's deadline.
func NewPublisher(conn kafkaconn.Conn, topic string) (*Publisher, error) {
	tr, err := conn.Transport(3*time.Second, time.Second)
	if err != nil {
		return nil, err
	}
	client := &kafka.Client{Addr: kafka.TCP(conn.Brokers...), Transport: tr, Timeout: produceTimeout}
	return &Publisher{topic: topic, transport: tr, g: newGroupProducer(client, topic), conn: conn}, nil
}

// PublishOrderPlaced publishes one OrderPlaced event keyed by its item.
func (p *Publisher) PublishOrderPlaced(ctx context.Context, e OrderPlaced) error {
	e.Type = TypeOrderPlaced
	return p.publishEvent(ctx, e.OrderID.String(), e)
}

// PublishOrderPaid publishes one OrderPaid event keyed by its item.
func (p *Publisher) PublishOrderPaid(ctx context.Context, e OrderPaid) error {
	e.Type = TypeOrderPaid
	return p.publishEvent(ctx, e.OrderID.String(), e)
}

func (p *Publisher) publishEvent(ctx context.Context, orderID string, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode order %s event: %w", orderID, err)
	}
	m := kafka.Message{Key: e.Key(), Value: b}
	injectTrace(ctx, &m)
	if err := p.g.publish(ctx, m); err != nil {
		return fmt.Errorf("publish order %s to %s: %w", orderID, p.topic, p.conn.Explain(err))
	}
	return nil
}

// Publish writes raw messages (used for dead letters).
func (p *Publisher) Publish(ctx context.Context, msgs ...kafka.Message) error {
	if err := p.g.publish(ctx, msgs...); err != nil {
		return fmt.Errorf("publish to %s: %w", p.topic, p.conn.Explain(err))
	}
	return nil
}

// Close closes the publisher's connections. Every publish has returned by then or fails.
func (p *Publisher) Close() error {
	p.transport.CloseIdleConnections()
	return nil
}

// EnsureTopic creates topic with the given partition count if it does not exist. Replication is 1
// on a single broker and up to 3 otherwise, with min.insync.replicas 2 at three.
func EnsureTopic(ctx context.Context, conn kafkaconn.Conn, topic string, partitions int) error {
	return ensureTopic(ctx, conn, topic, partitions)
}

// ensureTopic creates topic with the replication EnsureTopic describes and the extra settings, if
// it does not exist, and waits until every partition has a leader.
func ensureTopic(ctx context.Context, kc kafkaconn.Conn, topic string, partitions int, settings ...kafka.ConfigEntry) error {
	conn, err := dial(ctx, kc)
	if err != nil {
		return err
	}
	defer conn.Close()
	bs, err := conn.Brokers()
	if err != nil {
		return fmt.Errorf("kafka metadata: %w", err)
	}
	ctrl, err := conn.Controller()
	if err != nil {
		return fmt.Errorf("kafka controller: %w", err)
	}
	d, err := kc.Dialer(5 * time.Second)
	if err != nil {
		return err
	}
	cc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return fmt.Errorf("dial kafka controller: %w", kc.Explain(err))
	}
	defer cc.Close()
	tc := kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: min(len(bs), 3), ConfigEntries: settings}
	if tc.ReplicationFactor >= 3 {
		// acks=all then waits for two copies: one broker lost loses no acknowledged order.
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: "min.insync.replicas", ConfigValue: "2"})
	}
	if err := cc.CreateTopics(tc); err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return waitForLeaders(ctx, conn, topic)
}

// Ping checks that a broker answers a metadata request.
func Ping(ctx context.Context, kc kafkaconn.Conn) error {
	conn, err := dial(ctx, kc)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Brokers(); err != nil {
		return fmt.Errorf("kafka metadata: %w", kc.Explain(err))
	}
	return nil
}

func dial(ctx context.Context, kc kafkaconn.Conn) (*kafka.Conn, error) {
	d, err := kc.Dialer(3 * time.Second)
	if err != nil {
		return nil, err
	}
	var last error
	for _, b := range kc.Brokers {
		conn, err := d.DialContext(ctx, "tcp", b)
		if err == nil {
			if dl, ok := ctx.Deadline(); ok {
				_ = conn.SetDeadline(dl)
			}
			return conn, nil
		}
		last = err
	}
	return nil, kc.Unreachable(last)
}

func waitForLeaders(ctx context.Context, conn *kafka.Conn, topic string) error {
	for {
		parts, err := conn.ReadPartitions(topic)
		if err == nil && len(parts) > 0 {
			ready := true
			for _, p := range parts {
				if p.Leader.Host == "" {
					ready = false
				}
			}
			if ready {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leader yet: %w", topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
