package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/config"
)

// dialRedis builds one client per REDIS_URLS entry. User, password, TLS and
// database come from the URL (go-redis ParseURL).
//
// Retries are off (MaxRetries -1): go-redis re-sends a command whose reply
// timed out, which would turn an applied SET NX into "taken". Context
// timeouts are on so a call's deadline bounds the socket read too.
func dialRedis(cfg config.Config) ([]*redis.Client, []string, error) {
	var pool *x509.CertPool
	if cfg.RedisCAFile != "" {
		pem, err := os.ReadFile(cfg.RedisCAFile)
		if err != nil {
			return nil, nil, &exitError{code: 2, err: fmt.Errorf("REDIS_CA_FILE: %w", err)}
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, &exitError{code: 2, err: errors.New("REDIS_CA_FILE: no PEM certificate in the file")}
		}
	}
	var clients []*redis.Client
	var names []string
	for i, raw := range cfg.RedisURLs {
		opts, err := redis.ParseURL(strings.TrimSpace(raw))
		if err != nil {
			closeAll(clients)
			// ParseURL errors may quote the URL, and the URL may hold a password.
			return nil, nil, &exitError{code: 2, err: fmt.Errorf("REDIS_URLS: URL %d is not a valid Redis URL", i+1)}
		}
		opts.MaxRetries = -1
		// One dial per command: our own loops retry with backoff, and
		// go-redis's five dials would hold a call past its deadline.
		opts.DialerRetries = 1
		opts.ContextTimeoutEnabled = true
		opts.DialTimeout = cfg.RedisNodeTimeout
		opts.ReadTimeout = cfg.RedisNodeTimeout
		opts.WriteTimeout = cfg.RedisNodeTimeout
		opts.ClientName = "lockworker-" + cfg.WorkerID
		if opts.TLSConfig != nil && pool != nil {
			opts.TLSConfig.RootCAs = pool
		}
		if opts.TLSConfig != nil {
			opts.TLSConfig.MinVersion = tls.VersionTLS12
		}
		clients = append(clients, redis.NewClient(opts))
		names = append(names, opts.Addr)
	}
	return clients, names, nil
}

func closeAll(clients []*redis.Client) {
	for _, c := range clients {
		_ = c.Close()
	}
}

// redisLogger sends go-redis's own log lines (dial failures, pool notes)
// through slog, so they too carry workerId and follow LOG_FORMAT.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client: "+strings.TrimSpace(fmt.Sprintf(format, v...)))
}
