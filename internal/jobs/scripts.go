package jobs

import (
	_ "embed"
	"errors"
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

	//go:embed requeue.lua
	requeueLua    string
	requeueScript = redis.NewScript(requeueLua)
)

// splitReply splits a script's {tag, rest...} reply.
func splitReply(reply []any) (string, []any, error) {
	if len(reply) == 0 {
		return "", nil, errors.New("empty script reply")
	}
	return str(reply[0]), reply[1:], nil
}

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
