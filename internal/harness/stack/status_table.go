package stack

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
)

// NotRunning is how many of the services do not run.
func NotRunning(statuses []ServiceStatus) int {
	down := 0
	for _, s := range statuses {
		if !s.Running {
			down++
		}
	}
	return down
}

// DownError says how many of the services do not run and how to start them; nil when all run.
func DownError(statuses []ServiceStatus) error {
	if down := NotRunning(statuses); down > 0 {
		return fmt.Errorf("%d of %d services not running; start them with `fsctl stack up`", down, len(statuses))
	}
	return nil
}

// WriteStatusTable writes the services as `fsctl stack status` shows them: one row each, with
// its address, state, pid, data folder and log.
func WriteStatusTable(w io.Writer, statuses []ServiceStatus) error {
	table := tablewriter.NewWriter(w)
	table.Header("service", "address", "state", "pid", "data", "log")
	for _, s := range statuses {
		state, pid := "running", strconv.Itoa(s.PID)
		if !s.Running {
			state, pid = "stopped", "-"
		}
		if err := table.Append(s.Name, s.Address, state, pid, s.DataDir, s.LogFile); err != nil {
			return err
		}
	}
	return table.Render()
}

// WriteClusterTable writes each node of the local Redis Cluster: its role and the slots it owns;
// nothing when the stack keeps no cluster.
func WriteClusterTable(ctx context.Context, w io.Writer, cfg Config) error {
	nodes, err := ClusterNodes(ctx, cfg)
	if err != nil || len(nodes) == 0 {
		return err
	}
	table := tablewriter.NewWriter(w)
	table.Header("cluster node", "role", "slots", "pid")
	for _, n := range nodes {
		role, pid := n.Role, "-"
		if n.MasterOf != "" {
			role += " of " + n.MasterOf
		}
		if n.PID > 0 {
			pid = strconv.Itoa(n.PID)
		}
		if err := table.Append(n.Address, role, strings.Join(n.Slots, " "), pid); err != nil {
			return err
		}
	}
	return table.Render()
}
