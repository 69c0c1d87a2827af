package notice

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Publish sends msg on channel the way its listeners subscribe: sharded
// pub/sub (SPUBLISH, on the channel's slot, which follows a failover) in
// Redis Cluster, plain PUBLISH otherwise. c may be a pipeline.
func Publish(ctx context.Context, c redis.Cmdable, sharded bool, channel string, msg any) *redis.IntCmd {
	if sharded {
		return c.SPublish(ctx, channel, msg)
	}
	return c.Publish(ctx, channel, msg)
}
