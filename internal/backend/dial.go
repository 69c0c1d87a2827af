package backend

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/redisopt"
)

// dial builds the clients REDIS_MODE asks for, and names each lock node
// for errors (host:port or the master group, never a password):
//
//   - standalone: one client per REDIS_URLS entry;
//   - sentinel: one failover client, which asks the sentinels (REDIS_URLS)
//     for the master of REDIS_SENTINEL_MASTER and follows failovers;
//   - cluster: one cluster client seeded with REDIS_URLS.
//
// Retries are off everywhere: go-redis re-sends a command whose reply
// timed out, which would turn an applied SET NX into "taken". For the
// cluster client that means MaxRedirects -1 as well: its redirect loop
// also re-sends after timeouts and broken connections, so MOVED and ASK
// come back as errors, the client reloads the slot map, and our own loops
// try again. Context timeouts are on so a call's deadline bounds the
// socket read too.
//
// Maintenance notifications are off (see redisopt).
func dial(cfg config.Config, opts []*redis.Options) ([]redis.UniversalClient, []string) {
	switch cfg.RedisMode {
	case config.ModeSentinel:
		return []redis.UniversalClient{redis.NewFailoverClient(failoverOptions(cfg, opts))},
			[]string{"sentinel master " + cfg.RedisSentinelMaster}
	case config.ModeCluster:
		return []redis.UniversalClient{redis.NewClusterClient(clusterOptions(opts))},
			[]string{"cluster " + strings.Join(addrs(opts), ",")}
	}
	clients := make([]redis.UniversalClient, len(opts))
	names := make([]string, len(opts))
	for i, o := range opts {
		clients[i], names[i] = redis.NewClient(o), o.Addr
	}
	return clients, names
}

// parseURLs reads REDIS_URLS (user, password, database and TLS come from
// each URL) and applies what every client shares: no retries, one dial per
// command (our own loops retry with backoff, and go-redis's five dials
// would hold a call past its deadline), context timeouts, the node
// timeout, the client name, TLS 1.2 and REDIS_CA_FILE.
func parseURLs(cfg config.Config) ([]*redis.Options, error) {
	pool, err := caPool(cfg.RedisCAFile)
	if err != nil {
		return nil, err
	}
	var opts []*redis.Options
	for i, raw := range cfg.RedisURLs {
		o, err := redis.ParseURL(strings.TrimSpace(raw))
		if err != nil {
			// ParseURL errors may quote the URL, and the URL may hold a password.
			return nil, &config.Error{Var: "REDIS_URLS", Msg: "URL " + strconv.Itoa(i+1) + " is not a valid Redis URL"}
		}
		o.MaxRetries = -1
		o.DialerRetries = 1
		o.ContextTimeoutEnabled = true
		o.DialTimeout = cfg.RedisNodeTimeout
		o.ReadTimeout = cfg.RedisNodeTimeout
		o.WriteTimeout = cfg.RedisNodeTimeout
		o.ClientName = "lockworker-" + cfg.WorkerID
		o.MaintNotificationsConfig = redisopt.NoMaintNotifications()
		if o.TLSConfig != nil {
			o.TLSConfig.MinVersion = tls.VersionTLS12
			if pool != nil {
				o.TLSConfig.RootCAs = pool
			}
		}
		opts = append(opts, o)
	}
	return opts, nil
}

// failoverOptions: the URLs name the sentinels; their user, password,
// database and TLS (the same in every URL, config checks) are the data
// nodes'. The sentinels' own credentials are REDIS_SENTINEL_USERNAME and
// REDIS_SENTINEL_PASSWORD.
func failoverOptions(cfg config.Config, opts []*redis.Options) *redis.FailoverOptions {
	o := opts[0]
	return &redis.FailoverOptions{
		MasterName:            cfg.RedisSentinelMaster,
		SentinelAddrs:         addrs(opts),
		SentinelUsername:      cfg.RedisSentinelUsername,
		SentinelPassword:      cfg.RedisSentinelPassword,
		ClientName:            o.ClientName,
		Username:              o.Username,
		Password:              o.Password,
		DB:                    o.DB,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: true,
		TLSConfig:             perNodeTLS(o.TLSConfig),
	}
}

// clusterOptions: the URLs are seeds of one cluster and share user,
// password and TLS (config checks). Reads go to masters only (ReadOnly
// false): a replica may lag, and the lock must read what it wrote.
func clusterOptions(opts []*redis.Options) *redis.ClusterOptions {
	o := opts[0]
	return &redis.ClusterOptions{
		Addrs:                 addrs(opts),
		ClientName:            o.ClientName,
		Username:              o.Username,
		Password:              o.Password,
		MaxRedirects:          -1,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: true,
		TLSConfig:             perNodeTLS(o.TLSConfig),

		MaintNotificationsConfig: redisopt.NoMaintNotifications(),
	}
}

// perNodeTLS drops the server name ParseURL took from the first URL: the
// nodes a failover or cluster client dials have names of their own, and
// an empty ServerName makes the TLS handshake check each node's
// certificate against the host it dialed.
func perNodeTLS(c *tls.Config) *tls.Config {
	if c == nil {
		return nil
	}
	c = c.Clone()
	c.ServerName = ""
	return c
}

func addrs(opts []*redis.Options) []string {
	out := make([]string, len(opts))
	for i, o := range opts {
		out[i] = o.Addr
	}
	return out
}

// caPool reads REDIS_CA_FILE; nil when it is unset (system roots).
func caPool(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, &config.Error{Var: "REDIS_CA_FILE", Msg: err.Error()}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, &config.Error{Var: "REDIS_CA_FILE", Msg: "no PEM certificate in the file"}
	}
	return pool, nil
}
