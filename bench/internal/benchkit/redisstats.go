package benchkit

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ServerStats is what a redis-server says of its own work: its process's
// CPU time (INFO cpu, user and system) and, per command, the calls and
// the microseconds spent in them (INFO commandstats, which counts the
// commands a script runs as well as the script, whose time includes
// theirs).
type ServerStats struct {
	CPU  time.Duration
	cmds map[string]cmdStat
}

type cmdStat struct{ calls, usec int64 }

// scriptCommands run Lua: their time includes that of the commands they
// call, which commandstats counts as well.
var scriptCommands = []string{"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall"}

// ReadServerStats reads c's server's INFO cpu and commandstats.
func ReadServerStats(ctx context.Context, c *redis.Client) (ServerStats, error) {
	info, err := c.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		return ServerStats{}, err
	}
	s := ServerStats{cmds: map[string]cmdStat{}}
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			s.CPU += time.Duration(f * float64(time.Second))
			continue
		}
		name, rest, ok := strings.Cut(line, ":calls=")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st cmdStat
		for f := range strings.SplitSeq("calls="+rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				st.calls = n
			case "usec":
				st.usec = n
			}
		}
		s.cmds[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return s, nil
}

// Since is what happened between before and s. The INFO call that read
// before is counted in s: it is taken out.
func (s ServerStats) Since(before ServerStats) ServerStats {
	out := ServerStats{CPU: s.CPU - before.CPU, cmds: map[string]cmdStat{}}
	for k, v := range s.cmds {
		d := cmdStat{calls: v.calls - before.cmds[k].calls, usec: v.usec - before.cmds[k].usec}
		if k == "info" {
			d.calls--
		}
		if d.calls > 0 {
			out.cmds[k] = d
		}
	}
	return out
}

// Calls is every command executed, those inside scripts included.
func (s ServerStats) Calls() int64 {
	var n int64
	for _, v := range s.cmds {
		n += v.calls
	}
	return n
}

// ScriptCalls is the calls of scripts (their commands are in Calls too).
func (s ServerStats) ScriptCalls() int64 {
	var n int64
	for _, k := range scriptCommands {
		n += s.cmds[k].calls
	}
	return n
}

// ScriptUsec is the time spent in scripts, their commands included.
func (s ServerStats) ScriptUsec() int64 {
	var n int64
	for _, k := range scriptCommands {
		n += s.cmds[k].usec
	}
	return n
}

// Top names the n commands with the most calls, with their calls.
func (s ServerStats) Top(n int) string {
	keys := slices.SortedFunc(maps.Keys(s.cmds), func(a, b string) int { return int(s.cmds[b].calls - s.cmds[a].calls) })
	var parts []string
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, k+" "+strconv.FormatInt(s.cmds[k].calls, 10))
	}
	return strings.Join(parts, ", ")
}
