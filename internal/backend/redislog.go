package backend

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// RedisLogger sends go-redis's own log lines (dial failures, pool notes)
// through log, so they too carry workerId and follow LOG_FORMAT; give it
// to redis.SetLogger. A failed dial is logged at debug: it comes once per
// connection attempt (the notice subscription alone retries every 100ms),
// and the command that needed the connection reports the error where it
// is handled, once per retry. A nil log discards them all (the one-shot
// commands, which report their error themselves).
func RedisLogger(log *slog.Logger) interface {
	Printf(ctx context.Context, format string, v ...any)
} {
	return redisLogger{log: log}
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if l.log == nil {
		return
	}
	msg := "redis client: " + strings.TrimSpace(fmt.Sprintf(format, v...))
	if strings.Contains(msg, "connection pool: failed to dial") {
		l.log.DebugContext(ctx, msg)
		return
	}
	l.log.WarnContext(ctx, msg)
}
