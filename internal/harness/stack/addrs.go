package stack

import "fmt"

// DefaultAddrs are the host:port of every service of a stack on the default ports, its clusters'
// nodes included: a message about an address that does not answer suggests `fsctl stack up` for
// these only (reach.Hint), never for a database somewhere else.
func DefaultAddrs() []string {
	out := []string{
		fmt.Sprintf("127.0.0.1:%d", DefaultRedisPort),
		fmt.Sprintf("127.0.0.1:%d", DefaultPostgresPort),
		fmt.Sprintf("127.0.0.1:%d", DefaultKafkaPort),
	}
	out = append(out, DefaultClusterLayout.Addrs()...)
	return append(out, DefaultKafkaLayout.Addrs()...)
}
