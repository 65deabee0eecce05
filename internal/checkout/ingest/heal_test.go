package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// TestALateCommitDoesNotLeaveTheGroupBehind: a member's commit carries the group's current
// generation, and Kafka takes it from any member, for any partition. A commit that waited out a
// rebalance set a partition another member had already read on back to an older offset; that
// owner, idle with the sale over, never committed again, and the group lagged by messages it had
// recorded (chaos seeds 9 and 17: settle waited 3 minutes for a lag of 1,022). Here a second
// member joins the checkout's group and commits one partition back to its start while the
// checkout's consumer has recorded everything: the consumer, idle, moves the offset forward again.
// Without the heal the group lags for good.
func TestALateCommitDoesNotLeaveTheGroupBehind(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, user := range []string{"late-a", "late-b", "late-c"} {
		if code, body := c.Buy(user, "hot", user+"-k"); code != 202 {
			t.Fatalf("purchase %d: %d %s", i, code, body)
		}
	}
	waitConsumed(t, ctx, c, 3)
	placed := readTopic(t, ctx, c.Brokers, c.OrdersTopic)
	if len(placed) != 3 {
		t.Fatalf("%d messages on the orders topic after three purchases", len(placed))
	}

	late := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Brokers, GroupID: c.ConsumerGroup, Topic: c.OrdersTopic,
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 2 * time.Second, RebalanceTimeout: 12 * time.Second, JoinGroupBackoff: time.Second})
	defer late.Close()
	// A commit waits for the member's generation, so this one lands once the late member has
	// joined: the first message's partition goes back to offset 0.
	if err := late.CommitMessages(ctx, kafka.Message{Topic: c.OrdersTopic, Partition: placed[0].Partition, Offset: -1}); err != nil {
		t.Fatalf("the late member's commit: %v", err)
	}
	client, closeIdle, err := kafkaconn.NewClient(kafkaconn.Conn{Brokers: c.Brokers}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer closeIdle()
	if g, err := kafkaconn.GroupLag(ctx, client, c.OrdersTopic, c.ConsumerGroup); err != nil || g.Lag == 0 {
		t.Fatalf("the late commit set nothing back (%+v, %v): the test proves nothing", g, err)
	}
	waitConsumed(t, ctx, c, 3)
}
