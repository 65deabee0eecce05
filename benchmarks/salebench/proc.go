package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// procCPU is a process's user+system CPU time so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces) start after the last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil // USER_HZ is 100 on Linux
}

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

// procsCPU sums the CPU time of pids (0 for any that cannot be read).
func procsCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		d, _ := procCPU(pid)
		sum += d
	}
	return sum
}
