package gameday

import (
	"context"
	"fmt"
	"time"
)

type serverKill struct{}

func (serverKill) Name() string     { return "server-kill" }
func (serverKill) Describe() string { return "SIGKILL one checkout instance" }

func (serverKill) Apply(_ context.Context, env *Env) (string, error) {
	in, err := env.Fleet.Kill(env.Rand.IntN)
	if err != nil {
		return "", err
	}
	env.Note("%s killed (pid %d)", in.Name, in.PID())
	return fmt.Sprintf("SIGKILLed %s (pid %d)", in.Name, in.PID()), nil
}

type crashAfterReserve struct{ After int }

func (crashAfterReserve) Name() string { return "server-crash-after-reserve" }
func (f crashAfterReserve) Describe() string {
	return fmt.Sprintf("an instance that dies after its reservation #%d, before the publish", f.After)
}

func (f crashAfterReserve) Apply(ctx context.Context, env *Env) (string, error) {
	in, err := env.Fleet.Start(ctx, f.After)
	if err != nil {
		return "", err
	}
	env.Note("%s armed to crash after reservation #%d", in.Name, f.After)
	// Once the buyers are gone no reservation can come; give the instance a moment more, then say so.
	buyersDone := env.BuyersDone
	var late <-chan time.Time
wait:
	for {
		select {
		case <-in.Done():
			break wait
		case <-buyersDone:
			buyersDone, late = nil, time.After(10*time.Second)
		case <-late:
			return "", fmt.Errorf("%s never reached its reservation #%d while buyers came (no unit on sale for it?): %w", in.Name, f.After, errNotTriggered)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if code := in.ExitCode(); code != 137 {
		return "", fmt.Errorf("%s exited with status %d, not the injected 137 (see its log)", in.Name, code)
	}
	env.Note("%s crashed between reserve and publish (exit 137)", in.Name)
	return fmt.Sprintf("%s (pid %d) exited 137 after reservation #%d", in.Name, in.PID(), f.After), nil
}

type serverAdd struct{}

func (serverAdd) Name() string     { return "server-add" }
func (serverAdd) Describe() string { return "add a checkout instance" }

func (serverAdd) Apply(ctx context.Context, env *Env) (string, error) {
	in, err := env.Fleet.Start(ctx, 0)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (pid %d) in rotation; %d live", in.Name, in.PID(), len(env.Fleet.Live())), nil
}
