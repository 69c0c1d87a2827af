package jobs

import (
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

var (
	// fenceLua holds the fencing check; it goes before the step script.
	//go:embed fence.lua
	fenceLua string

	//go:embed step.lua
	stepLua    string
	stepScript = redis.NewScript(fenceLua + stepLua)

	//go:embed enqueue.lua
	enqueueLua    string
	enqueueScript = redis.NewScript(enqueueLua)

	//go:embed requeue.lua
	requeueLua    string
	requeueScript = redis.NewScript(requeueLua)

	//go:embed retry.lua
	retryLua    string
	retryScript = redis.NewScript(retryLua)

	//go:embed skip.lua
	skipLua    string
	skipScript = redis.NewScript(skipLua)

	//go:embed stats.lua
	statsLua    string
	statsScript = redis.NewScript(statsLua)

	//go:embed schedule_add.lua
	scheduleAddLua    string
	scheduleAddScript = redis.NewScript(scheduleAddLua)

	//go:embed schedule_remove.lua
	scheduleRemoveLua    string
	scheduleRemoveScript = redis.NewScript(scheduleRemoveLua)
)

// str reads one element of a script reply as text.
func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return fmt.Sprint(v)
}
