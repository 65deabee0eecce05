//go:build !linux

package loadgen

import (
	"context"
	"errors"
)

// eventLoops is false where epoll is not: every burst goes on a goroutine a lane.
const eventLoops = false

func (p Plan) startLoops(context.Context, string, []*lane, []Record, <-chan struct{}) (func(), error) {
	return nil, errors.New("no event loops on this system")
}
