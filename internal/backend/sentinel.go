package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/config"
)

// sentinelClient talks to whichever sentinel of REDIS_URLS answers first,
// with the sentinels' own credentials, for their +switch-master
// announcements: a subscription made through the failover client stays on
// the node it was made on, which after a failover is no longer the master.
func sentinelClient(cfg config.Config, opts []*redis.Options) *redis.SentinelClient {
	o := opts[0]
	return redis.NewSentinelClient(&redis.Options{
		Addr:                  o.Addr,
		Dialer:                anySentinel(addrs(opts), cfg.RedisNodeTimeout, o.TLSConfig),
		Username:              cfg.RedisSentinelUsername,
		Password:              cfg.RedisSentinelPassword,
		ClientName:            o.ClientName,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: true,
	})
}

// anySentinel dials the sentinels in turn and returns the first that
// answers, so a subscription outlives the sentinel it was made on. A
// custom dialer must do TLS itself.
func anySentinel(addrs []string, timeout time.Duration, tlsConfig *tls.Config) func(ctx context.Context, network, _ string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var errs []error
		for _, addr := range addrs {
			d := &net.Dialer{Timeout: timeout}
			var c net.Conn
			var err error
			if tlsConfig != nil {
				tc := tlsConfig.Clone()
				tc.ServerName, _, _ = net.SplitHostPort(addr)
				c, err = (&tls.Dialer{NetDialer: d, Config: tc}).DialContext(ctx, network, addr)
			} else {
				c, err = d.DialContext(ctx, network, addr)
			}
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}
