package gameday

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

func (r *run) stackUp(ctx context.Context) (string, error) {
	down, err := r.stackDown(ctx)
	if err != nil {
		return "", err
	}
	r.up = down
	if err := stack.Up(ctx, r.stack); err != nil {
		return "", err
	}
	if len(r.up) == 0 {
		return "already running (" + r.stack.Dir + ")" + on(r.stack), nil
	}
	return fmt.Sprintf("started %s in %s%s", strings.Join(r.up, ", "), r.stack.Dir, on(r.stack)), nil
}

// stackDown names the stack's services that are not running.
func (r *run) stackDown(ctx context.Context) ([]string, error) { return servicesDown(ctx, r.stack) }

// servicesDown names the services of the stack c that are not running.
func servicesDown(ctx context.Context, c stack.Config) ([]string, error) {
	statuses, err := stack.Status(ctx, c)
	if err != nil {
		return nil, err
	}
	var down []string
	for _, s := range statuses {
		if !s.Running {
			down = append(down, s.Name)
		}
	}
	return down, nil
}

// Endpoints are what a game day's sale runs on: the stack's single nodes, or its Redis Cluster and
// its replicated Kafka when the run asks for them (their ports defaulted).
func Endpoints(c stack.Config) stack.Endpoints {
	c = withClusterPorts(c)
	e := c.Endpoints()
	if c.RedisCluster.Masters > 0 {
		e.RedisURL = e.RedisClusterURL
	}
	if c.KafkaCluster.Brokers > 0 {
		e.KafkaBrokers = e.KafkaClusterBrokers
	}
	return e
}

// withClusterPorts fills the clusters' first ports the way the stack does.
func withClusterPorts(c stack.Config) stack.Config {
	if c.RedisCluster.Masters > 0 && c.RedisCluster.Port == 0 {
		c.RedisCluster.Port = stack.DefaultRedisClusterPort
	}
	if c.KafkaCluster.Brokers > 0 && c.KafkaCluster.Port == 0 {
		c.KafkaCluster.Port = stack.DefaultKafkaClusterPort
	}
	return c
}

// on says what the sale runs on, for the stack phase's note.
func on(c stack.Config) string {
	var parts []string
	if l := c.RedisCluster; l.Masters > 0 {
		parts = append(parts, fmt.Sprintf("a Redis Cluster of %d masters (%d replica(s) each)", l.Masters, l.Replicas))
	}
	if l := c.KafkaCluster; l.Brokers > 0 {
		parts = append(parts, fmt.Sprintf("a replicated Kafka of %d brokers", l.Brokers))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the sale runs on " + strings.Join(parts, " and ")
}

// loginEnv makes this process, and every instance and tool the game day starts, log in to a
// secure stack: its CA, users and passwords as FSCTL_* variables (the passwords read from their
// files, never put on a command line). A plain stack needs none.
func loginEnv(c *stack.Credentials) error {
	if c == nil {
		return nil
	}
	vars, err := c.Variables(stack.ReadPassword)
	if err != nil {
		return err
	}
	for _, kv := range vars {
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}
