package events

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/produce"

	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// countingTransport counts the produce requests sent through it; with hold set, the first one
// waits, after closing entered, until release is called.
type countingTransport struct {
	next    kafka.RoundTripper
	hold    bool
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once

	mu       sync.Mutex
	produces int
}

func (c *countingTransport) RoundTrip(ctx context.Context, addr net.Addr, req protocol.Message) (protocol.Message, error) {
	if _, ok := req.(*produce.Request); ok {
		c.mu.Lock()
		c.produces++
		first := c.produces == 1
		c.mu.Unlock()
		if first && c.hold {
			close(c.entered)
			<-c.gate
		}
	}
	return c.next.RoundTrip(ctx, addr, req)
}

func (c *countingTransport) release() { c.once.Do(func() { close(c.gate) }) }

func (c *countingTransport) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.produces
}

func newCountingProducer(t *testing.T, topic string, hold bool) (*groupProducer, *countingTransport) {
	t.Helper()
	brokers := testenv.KafkaBrokers(t)
	tr := &kafka.Transport{MetadataTTL: time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	ct := &countingTransport{next: tr, hold: hold, entered: make(chan struct{}), gate: make(chan struct{})}
	t.Cleanup(ct.release)
	return newGroupProducer(&kafka.Client{Addr: kafka.TCP(brokers...), Transport: ct}, topic), ct
}

// readTopic reads n messages of one partition from its start.
func readTopic(t *testing.T, topic string, partition, n int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: testenv.KafkaBrokers(t), Topic: topic, Partition: partition, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []kafka.Message
	for len(got) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %s/%d after %d of %d messages: %v", topic, partition, len(got), n, err)
		}
		got = append(got, m)
	}
	return got
}

// TestGroupProducerSharesProduceRequests: a lone publish goes out at once in its own request, and
// the publishes that arrive while a request is in flight share the next one, in their order.
func TestGroupProducerSharesProduceRequests(t *testing.T) {
	t.Parallel()
	topic := testenv.KafkaTopic(t, 1)
	g, ct := newCountingProducer(t, topic, true)
	ctx := context.Background()

	first := make(chan error, 1)
	go func() { first <- g.publish(ctx, kafka.Message{Key: []byte("k"), Value: []byte("0")}) }()
	select {
	case <-ct.entered: // the lone publish went out without waiting for company
	case <-time.After(10 * time.Second):
		t.Fatal("a lone publish was not sent")
	}
	const queued = 50
	var wg sync.WaitGroup
	errs := make([]error, queued)
	for i := range queued {
		// One at a time into the queue, so their order is known; each waits for its ack.
		g.enqueueWait(t, func() {
			wg.Go(func() { errs[i] = g.publish(ctx, kafka.Message{Key: []byte("k"), Value: []byte(strconv.Itoa(i + 1))}) })
		}, i+1)
	}
	ct.release()
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatalf("first publish: %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("publish %d: %v", i+1, err)
		}
	}
	if n := ct.count(); n != 2 {
		t.Errorf("%d produce requests for 1 + %d publishes, want 2 (the lone one, then every queued one together)", n, queued)
	}
	var values []string
	for _, m := range readTopic(t, topic, 0, queued+1) {
		values = append(values, string(m.Value))
	}
	want := make([]string, queued+1)
	for i := range want {
		want[i] = strconv.Itoa(i)
	}
	if !slices.Equal(values, want) {
		t.Errorf("the partition holds %v, want %v in publish order", values, want)
	}
}

// enqueueWait runs start and waits until the partition's queue holds n messages.
func (g *groupProducer) enqueueWait(t *testing.T, start func(), n int) {
	t.Helper()
	start()
	// A tight pace: the queue is in memory, and some tests wait on it once per message.
	eventually.OKEvery(t, 10*time.Second, time.Millisecond, func() error {
		g.mu.Lock()
		q := g.lanes[0]
		g.mu.Unlock()
		if got := q.Pending(); got < n {
			return fmt.Errorf("the queue holds %d messages, want %d", got, n)
		}
		return nil
	})
}

// TestGroupProducerLeftCallerIsNotSent: a publish whose caller gave up while it waited in the queue
// is never written (nothing reached Kafka that the caller was told failed), and the others are.
func TestGroupProducerLeftCallerIsNotSent(t *testing.T) {
	t.Parallel()
	topic := testenv.KafkaTopic(t, 1)
	g, ct := newCountingProducer(t, topic, true)
	first := make(chan error, 1)
	go func() { first <- g.publish(context.Background(), kafka.Message{Value: []byte("first")}) }()
	<-ct.entered
	gone, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	g.enqueueWait(t, func() { go func() { left <- g.publish(gone, kafka.Message{Value: []byte("left")}) }() }, 1)
	stays := make(chan error, 1)
	g.enqueueWait(t, func() {
		go func() { stays <- g.publish(context.Background(), kafka.Message{Value: []byte("stays")}) }()
	}, 2)
	cancel()
	if err := <-left; err == nil {
		t.Fatal("a publish whose context was cancelled reported success")
	}
	ct.release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-stays; err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, m := range readTopic(t, topic, 0, 2) {
		values = append(values, string(m.Value))
	}
	if !slices.Equal(values, []string{"first", "stays"}) {
		t.Errorf("the partition holds %v, want [first stays]: the left publish must not be written", values)
	}
}

// TestGroupProducerPartitionsLikeTheWriter: a keyed message lands on the partition kafka-go's
// Hash balancer picks (so a topic written by both keeps each item's events on one partition),
// headers and all.
func TestGroupProducerPartitionsLikeTheWriter(t *testing.T) {
	t.Parallel()
	const partitions = 4
	topic := testenv.KafkaTopic(t, partitions)
	p, err := NewPublisher(kafkaconn.Conn{Brokers: testenv.KafkaBrokers(t)}, topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	var msgs []kafka.Message
	for i := range 20 {
		msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "sale/item-%d", i), Value: []byte(strconv.Itoa(i)),
			Headers: []kafka.Header{{Key: "reason", Value: []byte("r" + strconv.Itoa(i))}}})
	}
	if err := p.Publish(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	ids := []int{0, 1, 2, 3}
	byPart := map[int][]kafka.Message{}
	for _, m := range msgs {
		part := (&kafka.Hash{}).Balance(m, ids...)
		byPart[part] = append(byPart[part], m)
	}
	for part, want := range byPart {
		got := readTopic(t, topic, part, len(want))
		for i, m := range got {
			if string(m.Key) != string(want[i].Key) || string(m.Value) != string(want[i].Value) ||
				len(m.Headers) != 1 || string(m.Headers[0].Value) != string(want[i].Headers[0].Value) {
				t.Errorf("partition %d message %d = %s=%s %v, want %s=%s with its header", part, i, m.Key, m.Value, m.Headers, want[i].Key, want[i].Value)
			}
		}
	}
}
