package redislock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one atomic script per operation. Each .lua file names its
// KEYS and ARGV in its header. They run with Script.Run (EVALSHA, falling
// back to EVAL on NOSCRIPT).
var (
	// valueLua writes and reads the lock's value, "<secret>:<token>:<worker>";
	// it goes before every script that needs more than the secret.
	//go:embed value.lua
	valueLua string

	// bumpLua is the tagged epoch bump of an attempt that won its quorum
	// without the authority's grant (the authority's own grant mints the
	// token inside acquire.lua).
	//go:embed bump.lua
	bumpLua string

	//go:embed acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(valueLua + acquireLua)

	//go:embed epoch.lua
	epochLua    string
	epochScript = redis.NewScript(valueLua + bumpLua + epochLua)

	//go:embed settoken.lua
	setTokenLua    string
	setTokenScript = redis.NewScript(valueLua + setTokenLua)

	//go:embed renew.lua
	renewLua    string
	renewScript = redis.NewScript(renewLua)

	//go:embed release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)

	//go:embed holder.lua
	holderLua    string
	holderScript = redis.NewScript(valueLua + holderLua)

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

// flag is a yes-or-no script argument as the scripts read it: "1" for
// yes, "0" for no.
func flag(yes bool) string {
	if yes {
		return "1"
	}
	return "0"
}
