package config

import (
	"net/url"
	"strings"
)

// Mode is a Redis topology, as REDIS_MODE names it and as /status and the
// logs show it (Config.Topology).
type Mode string

// The Redis topologies.
const (
	// ModeStandalone: REDIS_URLS are one node, or an odd number >= 3 of
	// independent masters for Redlock.
	ModeStandalone Mode = "standalone"
	// ModeRedlock is ModeStandalone with several URLs: Redlock over an odd
	// number >= 3 of independent masters. Config.Topology names it; it is
	// not a value of REDIS_MODE.
	ModeRedlock Mode = "redlock"
	// ModeSentinel: REDIS_URLS are the sentinels of the master group
	// REDIS_SENTINEL_MASTER.
	ModeSentinel Mode = "sentinel"
	// ModeCluster: REDIS_URLS are seed nodes of one Redis Cluster.
	ModeCluster Mode = "cluster"
)

// Topology is the topology the configuration describes: RedisMode, except
// ModeRedlock for standalone mode with more than one URL.
func (c Config) Topology() Mode {
	if c.RedisMode == ModeStandalone && len(c.RedisURLs) > 1 {
		return ModeRedlock
	}
	return c.RedisMode
}

// checkMode checks REDIS_MODE and what it makes of REDIS_URLS and the
// sentinel settings.
func (c Config) checkMode(p *problems) {
	if c.RedisMinReplicas < 0 {
		p.add("REDIS_MIN_REPLICAS", "must not be negative, got %d", c.RedisMinReplicas)
	}
	n := len(c.RedisURLs)
	switch c.RedisMode {
	case ModeStandalone:
		switch {
		case n == 2:
			p.add("REDIS_URLS", "2 nodes survive no failure: use 1 (single node) or an odd number >= 3 (Redlock); for Sentinel or Cluster set REDIS_MODE")
		case n > 2 && n%2 == 0:
			p.add("REDIS_URLS", "Redlock needs an odd number of nodes, got %d; for Cluster seed nodes set REDIS_MODE=cluster", n)
		}
		c.rejectSentinelSettings(p)
	case ModeSentinel:
		if strings.TrimSpace(c.RedisSentinelMaster) == "" {
			p.add("REDIS_SENTINEL_MASTER", "must name the master group when REDIS_MODE=sentinel")
		}
		c.checkSharedURLs(p, "sentinel mode: the URLs name the sentinels, and their user, password, database and TLS are the data nodes'")
	case ModeCluster:
		c.rejectSentinelSettings(p)
		c.checkSharedURLs(p, "cluster mode: the URLs are seeds of one cluster, which takes one user, password and TLS setting")
		for i, raw := range c.RedisURLs {
			if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && database(u) != "0" {
				p.add("REDIS_URLS", "URL %d: Redis Cluster has only database 0", i+1)
			}
		}
	default:
		p.add("REDIS_MODE", "must be standalone, sentinel or cluster, got %q", c.RedisMode)
	}
}

// rejectSentinelSettings names each sentinel variable set outside sentinel
// mode: a setting that would silently do nothing is a mistake.
func (c Config) rejectSentinelSettings(p *problems) {
	for _, v := range []struct{ name, value string }{
		{"REDIS_SENTINEL_MASTER", c.RedisSentinelMaster},
		{"REDIS_SENTINEL_USERNAME", c.RedisSentinelUsername},
		{"REDIS_SENTINEL_PASSWORD", c.RedisSentinelPassword},
	} {
		if v.value != "" {
			p.add(v.name, "is only used with REDIS_MODE=sentinel (REDIS_MODE is %s)", c.RedisMode)
		}
	}
}

// checkSharedURLs requires every URL to carry the same scheme, user,
// password and database: one client is built from them all. The message
// never repeats a URL, which may hold a password.
func (c Config) checkSharedURLs(p *problems, why string) {
	var first *url.URL
	for i, raw := range c.RedisURLs {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			continue // reported by checkRedisURL
		}
		if first == nil {
			first = u
			continue
		}
		if u.Scheme != first.Scheme || u.User.String() != first.User.String() || database(u) != database(first) {
			p.add("REDIS_URLS", "URL %d differs from URL 1 in scheme, user, password or database (%s)", i+1, why)
		}
	}
}

// database is the URL's database number as text, "0" when absent.
func database(u *url.URL) string {
	if db := strings.Trim(u.Path, "/"); db != "" {
		return db
	}
	return "0"
}
