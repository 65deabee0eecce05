package room

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The room's scripts live beside the package rather than in lua/: they are the room's own idea and
// change with it. Each script is common.lua followed by its own body.
var (
	//go:embed common.lua
	commonLua string
	//go:embed join.lua
	joinLua string
	//go:embed poll.lua
	pollLua string
	//go:embed tick.lua
	tickLua string
	//go:embed revoke.lua
	revokeLua string
	//go:embed settings.lua
	settingsLua string
)

// scripts holds one room script per operation.
type scripts struct {
	join, poll, tick, revoke, settings *redis.Script
}

func newScripts() scripts {
	return scripts{
		join:     redis.NewScript(commonLua + joinLua),
		poll:     redis.NewScript(commonLua + pollLua),
		tick:     redis.NewScript(commonLua + tickLua),
		revoke:   redis.NewScript(commonLua + revokeLua),
		settings: redis.NewScript(commonLua + settingsLua),
	}
}

func (sc scripts) all() map[string]*redis.Script {
	return map[string]*redis.Script{
		"join": sc.join, "poll": sc.poll, "tick": sc.tick, "revoke": sc.revoke, "settings": sc.settings,
	}
}
