package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/groupcommit"
)

// groupProducer sends concurrent publishes to one partition together through a groupcommit.Queue,
// as Redis's batcher does (stock.Batch): a message that finds its partition idle goes out at once,
// alone; whatever arrives while a produce request is in flight waits and goes out in the next one,
// all of it (up to maxBatch). Nothing waits on a timer, so a quiet server adds no latency and a burst needs one
// acks=all round trip per partition per batch instead of one per fixed linger. kafka-go's Writer
// closes a batch after BatchTimeout and writes one batch at a time per partition: under a burst
// whose produce round trip is longer than the linger, its batches queue behind each other.
//
// Messages of one partition are sent in the order they were published, one request at a time, so
// the order of a key's events is kept.
type groupProducer struct {
	client   *kafka.Client
	topic    string
	balancer kafka.Hash
	maxBatch int
	attempts int

	mu      sync.Mutex
	parts   []int
	partsAt time.Time
	lanes   map[int]*groupcommit.Queue[*produceCall] // one lane per partition: its order is kept
}

// produceCall is one message waiting for its produce request.
type produceCall struct {
	ctx  context.Context
	msg  kafka.Message
	at   time.Time
	done chan error
}

const (
	// groupMaxBatch bounds the records of one produce request (well under the broker's default
	// 1 MB message.max.bytes for events of a few hundred bytes).
	groupMaxBatch = 1024
	// partitionsTTL is how long a topic's partition list is trusted before it is read again.
	partitionsTTL = 5 * time.Second
	// produceTimeout bounds one produce request; a publish's own context still bounds its wait.
	produceTimeout = 5 * time.Second
	backoffMin     = 50 * time.Millisecond
	backoffMax     = 500 * time.Millisecond
)

func newGroupProducer(client *kafka.Client, topic string) *groupProducer {
	return &groupProducer{client: client, topic: topic, maxBatch: groupMaxBatch, attempts: 6, lanes: map[int]*groupcommit.Queue[*produceCall]{}}
}

// publish sends msgs, each to the partition its key hashes to (kafka.Hash, as the topic's other
// writers and the consumer expect), and returns once every one is acknowledged by all in-sync
// replicas, or the first error. A message whose caller left before it was sent is not sent.
func (g *groupProducer) publish(ctx context.Context, msgs ...kafka.Message) error {
	parts, err := g.partitions(ctx)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Topic != "" && m.Topic != g.topic {
			return fmt.Errorf("publish to %s: a message for topic %s", g.topic, m.Topic)
		}
	}
	calls := make([]*produceCall, len(msgs))
	for i, m := range msgs {
		c := &produceCall{ctx: ctx, msg: m, at: cmp.Or(m.Time, time.Now()), done: make(chan error, 1)}
		calls[i] = c
		g.enqueue(g.balancer.Balance(m, parts...), c)
	}
	for _, c := range calls {
		select {
		case err := <-c.done:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// enqueue queues c on its partition's lane.
func (g *groupProducer) enqueue(partition int, c *produceCall) {
	g.mu.Lock()
	q := g.lanes[partition]
	if q == nil {
		q = groupcommit.New(g.maxBatch, 1, func(batch []*produceCall) { g.send(partition, batch) })
		g.lanes[partition] = q
	}
	g.mu.Unlock()
	q.Add(c)
}

// send writes one batch with acks=all, retrying temporary errors (a leader election, a broker
// restarting) with backoff while any of its callers still waits, and tells each call the result.
func (g *groupProducer) send(partition int, batch []*produceCall) {
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.done <- err // its caller left before it was sent: nothing written
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	recs := make([]kafka.Record, len(live))
	var err error
	for attempt := range g.attempts {
		if attempt > 0 {
			if !anyWaiting(live) {
				break
			}
			time.Sleep(min(backoffMin<<(attempt-1), backoffMax))
			g.forgetPartitions()
		}
		for i, c := range live { // readers, consumed by each attempt
			recs[i] = kafka.Record{Time: c.at, Key: kafka.NewBytes(c.msg.Key), Value: kafka.NewBytes(c.msg.Value), Headers: c.msg.Headers}
		}
		ctx, cancel := context.WithTimeout(context.Background(), produceTimeout)
		var res *kafka.ProduceResponse
		res, err = g.client.Produce(ctx, &kafka.ProduceRequest{
			Topic: g.topic, Partition: partition, RequiredAcks: kafka.RequireAll,
			Records: kafka.NewRecordReader(recs...),
		})
		cancel()
		if err == nil && res.Error != nil {
			err = res.Error
		}
		if err == nil || !retryable(err) {
			break
		}
	}
	if err != nil {
		err = fmt.Errorf("produce to %s partition %d: %w", g.topic, partition, err)
	}
	for _, c := range live {
		c.done <- err
	}
}

func anyWaiting(calls []*produceCall) bool {
	for _, c := range calls {
		if c.ctx.Err() == nil {
			return true
		}
	}
	return false
}

// retryable is kafka-go's own rule for a produce worth repeating: a temporary Kafka error or a
// broken connection.
func retryable(err error) bool {
	var temp interface{ Temporary() bool }
	if errors.As(err, &temp) && temp.Temporary() {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded)
}

// partitions returns the topic's partition ids, read from the cluster at most every partitionsTTL.
func (g *groupProducer) partitions(ctx context.Context) ([]int, error) {
	g.mu.Lock()
	parts, at := g.parts, g.partsAt
	g.mu.Unlock()
	if len(parts) > 0 && time.Since(at) < partitionsTTL {
		return parts, nil
	}
	md, err := g.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{g.topic}})
	if err != nil {
		return nil, fmt.Errorf("publish to %s: read partitions: %w", g.topic, err)
	}
	parts = parts[:0:0]
	for _, t := range md.Topics {
		if t.Name != g.topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("publish to %s: %w", g.topic, t.Error)
		}
		for _, p := range t.Partitions {
			parts = append(parts, p.ID)
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("publish to %s: %w", g.topic, kafka.UnknownTopicOrPartition)
	}
	g.mu.Lock()
	g.parts, g.partsAt = parts, time.Now()
	g.mu.Unlock()
	return parts, nil
}

func (g *groupProducer) forgetPartitions() {
	g.mu.Lock()
	g.partsAt = time.Time{}
	g.mu.Unlock()
}
