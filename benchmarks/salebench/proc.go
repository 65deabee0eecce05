package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/benchmarks/internal/benchrun"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// procRSS reads a memory line (VmRSS, VmHWM) of /proc/PID/status in KiB.
func procRSS(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			n, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return n
		}
	}
	return 0
}

// redisPIDs asks Redis for its process id, every master's on a Redis Cluster; the ids of
// processes not on this machine are left out.
func redisPIDs(ctx context.Context, url string) []int {
	rdb, err := redisconn.Open(url, redisconn.Tune{})
	if err != nil {
		return nil
	}
	defer rdb.Close()
	var mu sync.Mutex
	var out []int
	_ = redisconn.ForEachMaster(ctx, rdb, func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "server").Result()
		if err != nil {
			return nil
		}
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "process_id:"); ok {
				pid, _ := strconv.Atoi(v)
				if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
					mu.Lock()
					out = append(out, pid)
					mu.Unlock()
				}
			}
		}
		return nil
	})
	return out
}

// postgresPIDs lists PostgreSQL's processes (its backends and its own workers, as pg_stat_activity
// names them, but not the one asking) that run on this machine; empty when the database is
// elsewhere or cannot be asked.
func postgresPIDs(ctx context.Context, url string) []int {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()`)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(pids, func(pid int) bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil
	})
}

// cpuOf reads the CPU time of each of pids (those that cannot be read are left out).
func cpuOf(pids []int) map[int]time.Duration {
	m := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		if d, err := benchrun.ProcCPU(pid); err == nil {
			m[pid] = d
		}
	}
	return m
}

// grown is the CPU the processes of after spent since before: a process that started in between
// counts from zero; one that ended in between is lost (PostgreSQL's short connections, such as the
// one that waits for the orders, cost little).
func grown(before, after map[int]time.Duration) time.Duration {
	var sum time.Duration
	for pid, d := range after {
		sum += d - before[pid]
	}
	return sum
}

// boxCPU is the machine's busy CPU time so far, every process and the kernel together (/proc/stat:
// user, nice, system, irq, softirq and steal); 0 where it cannot be read.
func boxCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
