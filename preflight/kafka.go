package preflight

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// checkKafka: the profile's order topic (and dead-letter topic) exist with leaders, how durable
// the order log is, and the group that writes the orders is there and keeping up.
func checkKafka(ctx context.Context, e *env) []finding.Finding {
	if e.cfg.OrdersTopic == "" {
		return []finding.Finding{{Group: "kafka", Check: "order log", Status: finding.Skip, Detail: "the profile declares no order log (kafka.topic)"}}
	}
	if e.kafka == nil {
		return needs("kafka", "Kafka")
	}
	out := []finding.Finding{topicCheck(e, e.cfg.OrdersTopic, "orders topic", e.cfg.Partitions)}
	if e.cfg.DeadLetterTopic != "" {
		out = append(out, topicCheck(e, e.cfg.DeadLetterTopic, "dead-letter topic", 1))
	}
	t := findTopic(e.meta, e.cfg.OrdersTopic)
	if t == nil || t.Error != nil {
		return out
	}
	out = append(out, durability(ctx, e, *t))
	if e.cfg.ConsumerGroup == "" {
		return append(out, finding.Finding{Group: "kafka", Check: "consumer group", Status: finding.Skip, Detail: "the profile declares no kafka.group"})
	}
	return append(out, consumerGroup(ctx, e, *t))
}

func findTopic(meta *kafka.MetadataResponse, name string) *kafka.Topic {
	for i := range meta.Topics {
		if meta.Topics[i].Name == name {
			return &meta.Topics[i]
		}
	}
	return nil
}

func topicCheck(e *env, name, what string, partitions int) finding.Finding {
	r := finding.Finding{Group: "kafka", Check: what}
	t := findTopic(e.meta, name)
	if t == nil || t.Error != nil {
		reason := "missing"
		if t != nil && !errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
			reason = t.Error.Error()
		}
		r.Status, r.Detail, r.Fix = finding.Fail, fmt.Sprintf("%s: %s", name, reason), e.fix.topic
		if e.fix.createTopic {
			r.Repair = fmt.Sprintf("create topic %s with %d partition(s)", name, partitions)
			r.Apply = func(ctx context.Context) error { return events.EnsureTopic(ctx, e.cfg.Kafka, name, partitions) }
		}
		return r
	}
	leaderless := 0
	for _, p := range t.Partitions {
		if p.Leader.Host == "" {
			leaderless++
		}
	}
	r.Status, r.Detail = finding.Pass, fmt.Sprintf("%s: %d partition(s), replication factor %d", name, len(t.Partitions), replicationFactor(*t))
	if leaderless > 0 {
		r.Status = finding.Fail
		r.Detail += fmt.Sprintf(", %d partition(s) without a leader", leaderless)
		r.Fix = "bring the brokers back: publishes to those partitions fail"
	}
	return r
}

func replicationFactor(t kafka.Topic) int {
	rf := 0
	for _, p := range t.Partitions {
		if rf == 0 || len(p.Replicas) < rf {
			rf = len(p.Replicas)
		}
	}
	return rf
}

// durability: with acks=all, a write is safe once min.insync.replicas brokers have it.
func durability(ctx context.Context, e *env, t kafka.Topic) finding.Finding {
	r := finding.Finding{Group: "kafka", Check: "durability"}
	res, err := e.kafka.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: t.Name, ConfigNames: []string{"min.insync.replicas"},
	}}})
	minISR := -1
	if err == nil && len(res.Resources) == 1 {
		err = res.Resources[0].Error
		for _, c := range res.Resources[0].ConfigEntries {
			if c.ConfigName == "min.insync.replicas" {
				minISR, _ = strconv.Atoi(c.ConfigValue)
			}
		}
	}
	if err != nil || minISR < 0 {
		r.Status, r.Detail = finding.Warn, fmt.Sprintf("min.insync.replicas of %s unreadable: %v", t.Name, err)
		return r
	}
	rf := replicationFactor(t)
	r.Status, r.Detail = finding.Pass, fmt.Sprintf("replication factor %d, min.insync.replicas %d", rf, minISR)
	switch {
	case minISR > rf:
		r.Status, r.Fix = finding.Fail, "every publish fails: lower min.insync.replicas below the replication factor"
	case rf == 1:
		r.Status = finding.Warn
		r.Detail += ": one broker lost loses every order not yet in PostgreSQL"
		r.Fix = "in production: replication factor 3, min.insync.replicas 2"
	case minISR < 2:
		r.Status = finding.Warn
		r.Detail += ": an acknowledged order may live on one broker only"
		r.Fix = "kafka-configs --alter --add-config min.insync.replicas=2"
	}
	return r
}

// consumerGroup: someone consumes the orders, and the log is drained (lag is what a crash now
// would leave to replay).
func consumerGroup(ctx context.Context, e *env, t kafka.Topic) finding.Finding {
	r := finding.Finding{Group: "kafka", Check: "consumer group"}
	g, err := kafkaconn.GroupLag(ctx, e.kafka, t.Name, e.cfg.ConsumerGroup)
	if err != nil {
		r.Status, r.Detail = finding.Fail, err.Error()
		return r
	}
	r.Detail = fmt.Sprintf("%s: %s, %d member(s), lag %d over %d partition(s)", g.Group, g.State, g.Members, g.Lag, len(g.Partitions))
	switch {
	case g.Members == 0:
		r.Status = finding.Fail
		r.Detail += ": nobody consumes the orders"
		r.Fix = e.fix.consumer
	case g.Lag > 0:
		r.Status = finding.Warn
		r.Detail += ": orders are still on their way to PostgreSQL"
		r.Fix = "wait for the consumer to drain before opening"
	default:
		r.Status = finding.Pass
	}
	return r
}
