package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readPID reads the first line of a pidfile (PostgreSQL's postmaster.pid has more lines after it).
func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pidfile %s: no pid in %q", path, line)
	}
	return pid, nil
}

// alive reports whether pid is a live (not zombie) process whose command line contains want, so a
// stale pidfile whose pid was reused by an unrelated process after a reboot is not mistaken for the service.
func alive(pid int, want string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// state is the field after "(comm)"; comm may itself contain spaces or parentheses
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			return false
		}
	}
	if want == "" {
		return true
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return !os.IsNotExist(err) // no /proc: trust the signal probe
	}
	return bytes.Contains(cmdline, []byte(want))
}

// pidFromFile returns the pid recorded in path when that process is alive and looks like want.
func pidFromFile(path, want string) (int, bool) {
	pid, err := readPID(path)
	if err != nil || !alive(pid, want) {
		return 0, false
	}
	return pid, true
}

// stopPID sends SIGTERM, waits up to grace for the process to go, then SIGKILLs it. Detached services
// lead their own process group, so the whole group is signalled, and once the leader is gone any
// helper it left in the group is killed too: nothing of the service survives Down.
func stopPID(ctx context.Context, pid int, want string, grace time.Duration) error {
	if !alive(pid, want) {
		return nil
	}
	pgid, err := syscall.Getpgid(pid)
	leader := err == nil && pgid == pid
	signal := func(sig syscall.Signal) {
		if leader {
			_ = syscall.Kill(-pid, sig)
		}
		_ = syscall.Kill(pid, sig)
	}
	signal(syscall.SIGTERM)
	if !waitGone(ctx, pid, grace) {
		signal(syscall.SIGKILL)
		if !waitGone(context.WithoutCancel(ctx), pid, 5*time.Second) {
			return fmt.Errorf("pid %d still alive after SIGKILL", pid)
		}
	}
	if !leader {
		return nil
	}
	for deadline := time.Now().Add(5 * time.Second); groupSize(pid) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of group %d still alive after SIGKILL", groupSize(pid), pid)
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	return nil
}

// groupSize counts the live (not zombie) processes in process group pgid.
func groupSize(pgid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := strconv.Itoa(pgid)
	n := 0
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		// fields after "(comm)": state, ppid, pgrp, ...
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 2 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			n++
		}
	}
	return n
}

// waitGone waits up to d for process pid, just signalled, to be gone: exited to its last thread,
// so its ports are free. Neither its command line nor its main thread says so: a dying process
// loses its command line first (its memory goes before its files), its main thread may be a zombie
// while the others still run, and a JVM with a hundred threads holds its listening socket until the
// last (a game day restarted a broker into "port taken" both ways).
func waitGone(ctx context.Context, pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid, "") || threadsLeft(pid) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return !alive(pid, "") && !threadsLeft(pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// threadsLeft reports whether a thread of process pid is still running. Its main thread can be a
// zombie already while the others are torn down, and the process's files (its listening sockets)
// close only with the last of them.
func threadsLeft(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false
	}
	for _, t := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X' {
			return true
		}
	}
	return false
}

// startDetached starts a long-running service in its own session with stdout and stderr appended to
// logPath, so it outlives fsctl and ignores the terminal's Ctrl-C. The returned channel yields the
// exit error if the process dies while this fsctl is still running (it also reaps the zombie).
func startDetached(name string, args []string, dir, logPath string) (*exec.Cmd, <-chan error, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, exited, nil
}

// runTool runs a short command (initdb, pg_ctl, redis-server --daemonize) and returns its output in
// the error when it fails. WaitDelay bounds the wait should a daemon it spawns keep the output pipe open.
func runTool(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, indent(out))
	}
	return out, nil
}

// waitReady polls probe until it succeeds, dead reports the process gone, or timeout passes.
func waitReady(ctx context.Context, timeout time.Duration, dead func() error, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
		last := probe(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		if err := dead(); err != nil {
			return fmt.Errorf("process died before it was ready: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// exitedFunc turns startDetached's channel into a dead check for waitReady.
func exitedFunc(exited <-chan error) func() error {
	return func() error {
		select {
		case err := <-exited:
			if err == nil {
				err = errors.New("exited with status 0")
			}
			return err
		default:
			return nil
		}
	}
}

// portTaken reports whether something already accepts connections on the loopback port.
func portTaken(port int) bool {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 500*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// tail returns the last n lines of a log file, indented, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "  (no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return indent([]byte(strings.Join(lines, "\n")))
}

func indent(b []byte) string {
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return "  (empty)"
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
