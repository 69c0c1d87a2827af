package redislock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one atomic script per operation. Each .lua file names its
// KEYS and ARGV in its header. They run with Script.Run (EVALSHA, falling
// back to EVAL on NOSCRIPT).
var (
	// bumpLua is the epoch bump both modes use; it goes before acquire.lua
	// (single node: bumped inside the acquire) and epoch.lua (Redlock: on
	// the epoch authority after the quorum is won).
	//go:embed bump.lua
	bumpLua string

	//go:embed acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(bumpLua + acquireLua)

	//go:embed epoch.lua
	epochLua    string
	epochScript = redis.NewScript(bumpLua + epochLua)

	//go:embed settoken.lua
	setTokenLua    string
	setTokenScript = redis.NewScript(setTokenLua)

	//go:embed renew.lua
	renewLua    string
	renewScript = redis.NewScript(renewLua)

	//go:embed release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)

	//go:embed holder.lua
	holderLua    string
	holderScript = redis.NewScript(holderLua)

	//go:embed readepoch.lua
	readEpochLua    string
	readEpochScript = redis.NewScript(readEpochLua)
)

// Repairing the epoch (raise.go).
var (
	//go:embed raise.lua
	raiseLua    string
	raiseScript = redis.NewScript(raiseLua)

	//go:embed reissue.lua
	reissueLua    string
	reissueScript = redis.NewScript(reissueLua)
)
