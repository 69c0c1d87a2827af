package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/oklog/ulid/v2"

	"github.com/lockworker/lockworker/internal/bearer"
	"github.com/lockworker/lockworker/internal/guest"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/partition"
	"github.com/lockworker/lockworker/internal/redislock"
)

// Config is the daemon's configuration. Each field's default is in its tag.
type Config struct {
	// Port serves /healthz, /readyz, /status, /metrics and /jobs.
	Port int `env:"PORT" envDefault:"3000" what:"a port number"`
	// RedisMode is standalone, sentinel or cluster: what REDIS_URLS name.
	RedisMode Mode `env:"REDIS_MODE" envDefault:"standalone"`
	// RedisURLs: in standalone mode one URL is a single node and an odd
	// number >= 3 is Redlock (the first URL also holds the fencing epoch and
	// the job queue); in sentinel mode the sentinels; in cluster mode seed
	// nodes. URLs may carry a password: String and LogValue redact it.
	RedisURLs []string `env:"REDIS_URLS" envDefault:"redis://127.0.0.1:6379" envSeparator:"," secret:"url"`
	// RedisCAFile is a PEM bundle for rediss:// servers with a private CA.
	RedisCAFile string `env:"REDIS_CA_FILE"`
	// RedisSentinelMaster names the master group the sentinels watch.
	// Required in sentinel mode, rejected in the others.
	RedisSentinelMaster string `env:"REDIS_SENTINEL_MASTER"`
	// RedisSentinelUsername is the ACL user for the sentinels themselves
	// (the data nodes' user comes from the URLs). Sentinel mode only.
	RedisSentinelUsername string `env:"REDIS_SENTINEL_USERNAME"`
	// RedisSentinelPassword is the sentinels' own password. Sentinel mode only.
	RedisSentinelPassword string `env:"REDIS_SENTINEL_PASSWORD" secret:"true"`
	// RedisMinReplicas is how many replicas must acknowledge a fencing
	// epoch bump before its token is used, even when fewer are online.
	// Default -1 (or empty): by mode, set by Load: 1 in sentinel and
	// cluster mode, 0 in standalone.
	RedisMinReplicas int `env:"REDIS_MIN_REPLICAS" envDefault:"-1"`
	// LockKey is the lock's name. Every key and channel of the lock and its
	// queue is derived from it under one hash tag (package keyspace).
	LockKey string `env:"LOCK_KEY" envDefault:"lockworker:leader"`
	// Partitions splits the lock and its queue into this many partitions,
	// each with its own lease, fencing epoch, queue and chart, shared out
	// over the live replicas; a job's ordering key picks its partition.
	// 1 (the default) is one lock and one queue, as without partitions.
	// Recorded in Redis by the first replica: every replica and command
	// must use the same count. 1 to 1024.
	Partitions int `env:"PARTITIONS" envDefault:"1"`
	// LockTTL is the lease: how long a dead leader blocks the others.
	LockTTL time.Duration `env:"LOCK_TTL" envDefault:"15s"`
	// RenewInterval must be below LockTTL/2 so one failed renew can be retried.
	RenewInterval time.Duration `env:"RENEW_INTERVAL" envDefault:"5s"`
	// RetryInterval is the follower's polling period (a fallback for notices).
	RetryInterval time.Duration `env:"RETRY_INTERVAL" envDefault:"5s"`
	// RedisNodeTimeout bounds each command to one Redis node. Default:
	// LockTTL/10, at most 1s.
	RedisNodeTimeout time.Duration `env:"REDIS_NODE_TIMEOUT"`
	// ClockDriftFactor is subtracted from every lease as TTL*factor+2ms.
	ClockDriftFactor float64 `env:"CLOCK_DRIFT_FACTOR" envDefault:"0.01"`
	// ReleaseNotices makes followers subscribe to release notices and try at
	// once instead of waiting for the next retry.
	ReleaseNotices bool `env:"RELEASE_NOTICES" envDefault:"true"`
	// WorkerID names this replica in logs and status. Default: a new ULID.
	WorkerID string `env:"WORKER_ID"`
	// LogLevel is debug, info, warn or error.
	LogLevel LogLevel `env:"LOG_LEVEL" envDefault:"info"`
	// LogFormat is text or json.
	LogFormat LogFormat `env:"LOG_FORMAT" envDefault:"text"`
	// ShutdownTimeout bounds stopping work and releasing the lock on SIGTERM.
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"10s"`

	// JobsToken enables POST /jobs for callers presenting it as a bearer
	// token. Unset: the endpoint is off. At least bearer.MinLen bytes, no
	// spaces or control characters.
	JobsToken string `env:"JOBS_TOKEN" secret:"true"`
	// AdminToken enables the operator actions over HTTP (step down, pause,
	// resume, requeue) for callers presenting it as a bearer token, and
	// unlocks them on the dashboard. Unset: those endpoints are off. At
	// least bearer.MinLen bytes, no spaces or control characters.
	AdminToken string `env:"ADMIN_TOKEN" secret:"true"`
	// JobHandler is log (simulated heavy work), exec (runs JobCommand) or
	// http (posts each job to JobURL).
	JobHandler JobHandler `env:"JOB_HANDLER" envDefault:"log"`
	// JobCommand is the command line for the exec handler, split on spaces.
	JobCommand string `env:"JOB_COMMAND"`
	// JobURL receives each job as a POST with the http handler: http or
	// https. User information in it (user:password@) is sent as basic
	// authentication unless JobURLToken is set; String and LogValue
	// redact its password.
	JobURL string `env:"JOB_URL" secret:"url"`
	// JobURLToken, when set, is sent to JobURL as a bearer token.
	JobURLToken string `env:"JOB_URL_TOKEN" secret:"true"`
	// JobURLCA is a PEM bundle for an https JobURL whose certificate a
	// private CA signed. Default: the system's roots.
	JobURLCA string `env:"JOB_URL_CA"`
	// JobTimeout bounds each job of the http and exec handlers (a request;
	// a command, whose process tree is then stopped); the lease's local
	// deadline can cut it sooner. A job that outlives it fails that
	// attempt.
	JobTimeout time.Duration `env:"JOB_TIMEOUT" envDefault:"30s"`
	// JobEnv names the daemon's variables the exec command also gets, on
	// top of PATH, HOME, LANG, TZ and the LOCKWORKER_* job variables. Never
	// REDIS_*, JOBS_TOKEN, ADMIN_TOKEN or LOCKWORKER_* (guest.CheckEnvName).
	JobEnv []string `env:"JOB_ENV" envSeparator:","`
	// JobStopGrace is how long a stopped exec command's process tree has
	// between SIGTERM and SIGKILL; the lease deadline can shorten it.
	JobStopGrace time.Duration `env:"JOB_STOP_GRACE" envDefault:"5s"`
	// JobMaxAttempts is how often a failing job runs before it fails for
	// good (JobOnFailure).
	JobMaxAttempts int `env:"JOB_MAX_ATTEMPTS" envDefault:"25"`
	// JobRetryBase is the wait before a failed job's first retry; each
	// retry waits twice as long, up to JobRetryMax (jittered). Only the
	// job's key waits.
	JobRetryBase time.Duration `env:"JOB_RETRY_BASE" envDefault:"1s"`
	// JobRetryMax caps the wait between retries, and a Retry-After a 429
	// or 503 asks for.
	JobRetryMax time.Duration `env:"JOB_RETRY_MAX" envDefault:"1m"`
	// JobOnFailure is what becomes of a job that failed for good: park
	// (its key holds it and every later job, in order, until lockworker
	// retry or skip) or dead-letter (the job leaves, its key goes on: the
	// key's order breaks).
	JobOnFailure string `env:"JOB_ON_FAILURE" envDefault:"park"`
	// JobConcurrency is the most jobs a replica runs at once, over every
	// partition it leads; never two of one key.
	JobConcurrency int `env:"JOB_CONCURRENCY" envDefault:"32"`
	// JobBatch is how many jobs the leader claims, runs and commits per
	// round trip to Redis when the queue is deep (group commit); 1 is one
	// job per round trip. A leader lost mid-batch leaves its whole batch
	// to run again.
	JobBatch int `env:"JOB_BATCH" envDefault:"64"`
	// JobIdempotencyTTL is how long an idempotency key (Idempotency-Key,
	// enqueue --idempotency-key) is kept after its job finished: a
	// retried enqueue with it answers the first job's ID until then.
	JobIdempotencyTTL time.Duration `env:"JOB_IDEMPOTENCY_TTL" envDefault:"24h"`
	// WorkDuration is how long the log handler's simulated work takes.
	WorkDuration time.Duration `env:"WORK_DURATION" envDefault:"1s"`

	// HTTPMaxConns bounds the open HTTP connections (idle keep-alives
	// included), so clients cannot take the descriptors jobs need; a few
	// more are kept for /healthz and /readyz. The daemon lowers it to half
	// its descriptor limit (RLIMIT_NOFILE) when that is smaller.
	HTTPMaxConns int `env:"HTTP_MAX_CONNS" envDefault:"1024"`
	// HTTPMaxBodyBytes bounds the request bodies (POST /jobs) being read at
	// once, across all requests: past it a request gets 503 with
	// Retry-After. At least jobs.MaxBatchBytes (one NDJSON body of the
	// largest size).
	HTTPMaxBodyBytes int64 `env:"HTTP_MAX_BODY_BYTES" envDefault:"33554432"`
}

// ErrInvalid marks every configuration error: errors.Is(err, ErrInvalid)
// holds for an *Error and for what wraps ErrInvalid, so main can exit 2.
var ErrInvalid = errors.New("invalid configuration")

// Error is a configuration error about one variable.
type Error struct {
	Var string
	Msg string
}

func (e *Error) Error() string { return e.Var + ": " + e.Msg }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Load reads every variable through getenv (os.Getenv in main) and
// validates the result. An empty value counts as unset. Errors are *Error
// values joined with errors.Join, one per bad variable, every one found
// (a value that cannot be read and one that breaks a rule alike), in the
// order of the configuration table.
func Load(getenv func(string) string) (Config, error) {
	var c Config
	params, err := env.GetFieldParams(&c)
	if err != nil {
		return Config{}, err
	}
	vars := make(map[string]string, len(params))
	for _, p := range params {
		if v := getenv(p.Key); v != "" {
			vars[p.Key] = v
		}
	}
	var unread problems
	if err := env.ParseWithOptions(&c, env.Options{Environment: vars}); err != nil {
		if unread = unreadable(err, vars); len(unread) == 0 {
			return Config{}, err
		}
		c.defaultsFor(unread) // so the other variables are checked against sane values
	}
	c.derive()
	p := append(unread, without(c.problems(), unread)...)
	if len(p) > 0 {
		p.sort()
		return Config{}, errors.Join(p...)
	}
	return c, nil
}

// derive fills the settings whose default depends on others.
func (c *Config) derive() {
	if c.WorkerID == "" {
		c.WorkerID = ulid.Make().String()
	}
	for i, name := range c.JobEnv {
		c.JobEnv[i] = strings.TrimSpace(name) // "A, B" is what people write
	}
	if c.RedisMinReplicas == -1 {
		c.RedisMinReplicas = 0
		if c.RedisMode == ModeSentinel || c.RedisMode == ModeCluster {
			c.RedisMinReplicas = 1
		}
	}
	if c.RedisNodeTimeout == 0 && c.LockTTL > 0 {
		c.RedisNodeTimeout = min(c.LockTTL/10, time.Second)
	}
}

// Validate checks every field and their relations.
func (c Config) Validate() error { return errors.Join(c.problems()...) }

func (c Config) problems() problems {
	var p problems
	if c.Port < 1 || c.Port > 65535 {
		p.add("PORT", "must be between 1 and 65535, got %d", c.Port)
	}
	c.checkRedis(&p)
	c.checkTimings(&p)
	if !workerName(c.WorkerID) {
		p.add("WORKER_ID", "must be 1 to %d printable ASCII characters without spaces (it is also the replica's Redis client name), got %q", maxWorkerID, c.WorkerID)
	}
	if err := c.LogFormat.check(); err != nil {
		p.add("LOG_FORMAT", "%v", err)
	}
	c.checkJobs(&p)
	c.checkHandler(&p)
	c.checkHTTP(&p)
	return p
}

// problems collects every *Error a validation finds.
type problems []error

func (p *problems) add(v, format string, args ...any) {
	*p = append(*p, &Error{Var: v, Msg: fmt.Sprintf(format, args...)})
}

func (c Config) checkRedis(p *problems) {
	if len(c.RedisURLs) == 0 {
		p.add("REDIS_URLS", "must name at least one redis:// or rediss:// URL")
	}
	for i, u := range c.RedisURLs {
		if err := checkRedisURL(u); err != nil {
			p.add("REDIS_URLS", "URL %d: %v", i+1, err)
		}
	}
	if c.RedisMode == ModeStandalone {
		checkDistinctServers(c.RedisURLs, p)
	}
	c.checkMode(p)
	switch {
	case strings.TrimSpace(c.LockKey) == "":
		p.add("LOCK_KEY", "must not be empty")
	case !keyspace.ValidLockKey(c.LockKey):
		p.add("LOCK_KEY", "%q cannot carry a hash tag: give it a non-empty {tag} of its own, or do not start it with '}'", c.LockKey)
	}
	if c.ClockDriftFactor < 0 || c.ClockDriftFactor >= 0.5 {
		p.add("CLOCK_DRIFT_FACTOR", "must be in [0, 0.5), got %g", c.ClockDriftFactor)
	}
}

func (c Config) checkTimings(p *problems) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"LOCK_TTL", c.LockTTL}, {"RENEW_INTERVAL", c.RenewInterval}, {"RETRY_INTERVAL", c.RetryInterval},
		{"REDIS_NODE_TIMEOUT", c.RedisNodeTimeout}, {"SHUTDOWN_TIMEOUT", c.ShutdownTimeout},
	} {
		if d.v <= 0 {
			p.add(d.name, "must be a positive duration such as 5s or 500ms, got %s", d.v)
		}
	}
	if c.LockTTL > 0 && c.LockTTL < redislock.MinTTL {
		p.add("LOCK_TTL", "must be at least %s, got %s", redislock.MinTTL, c.LockTTL)
	}
	if c.LockTTL > 0 && c.RenewInterval > 0 && c.RenewInterval >= c.LockTTL/2 {
		p.add("RENEW_INTERVAL", "must be below LOCK_TTL/2 (%s) so a failed renew can be retried before the lease ends, got %s", c.LockTTL/2, c.RenewInterval)
	}
	if c.LockTTL > 0 && c.RedisNodeTimeout > 0 && c.RedisNodeTimeout >= c.LockTTL/3 {
		p.add("REDIS_NODE_TIMEOUT", "must be below LOCK_TTL/3 (%s), got %s", c.LockTTL/3, c.RedisNodeTimeout)
	}
}

func (c Config) checkJobs(p *problems) {
	if c.WorkDuration <= 0 {
		p.add("WORK_DURATION", "must be a positive duration such as 1s or 50ms, got %s", c.WorkDuration)
	}
	for _, name := range c.JobEnv {
		if err := guest.CheckEnvName(name); err != nil {
			p.add("JOB_ENV", "%v", err)
		}
	}
	if c.JobStopGrace <= 0 {
		p.add("JOB_STOP_GRACE", "must be a positive duration such as 5s or 500ms, got %s", c.JobStopGrace)
	}
	if c.Partitions < 1 || c.Partitions > partition.Max {
		p.add("PARTITIONS", "must be between 1 and %d, got %d", partition.Max, c.Partitions)
	}
	if c.JobBatch < 1 || c.JobBatch > jobs.MaxWorkerBatch {
		p.add("JOB_BATCH", "must be between 1 and %d, got %d", jobs.MaxWorkerBatch, c.JobBatch)
	}
	if c.JobMaxAttempts < 1 {
		p.add("JOB_MAX_ATTEMPTS", "must be at least 1, got %d", c.JobMaxAttempts)
	}
	c.checkRetries(p)
}

// checkHandler checks JOB_HANDLER and what it needs.
func (c Config) checkHandler(p *problems) {
	switch err := c.JobHandler.check(); {
	case err != nil:
		p.add("JOB_HANDLER", "%v", err)
	case c.JobHandler == HandlerExec && len(strings.Fields(c.JobCommand)) == 0:
		p.add("JOB_COMMAND", "must be set when JOB_HANDLER=exec")
	case c.JobHandler == HandlerHTTP && c.JobURL == "":
		p.add("JOB_URL", "must be set when JOB_HANDLER=http")
	}
	c.checkJobURL(p)
}

// checkHTTP checks the HTTP surface's settings: its bounds and tokens.
func (c Config) checkHTTP(p *problems) {
	if c.HTTPMaxConns < 1 {
		p.add("HTTP_MAX_CONNS", "must be at least 1, got %d", c.HTTPMaxConns)
	}
	if c.HTTPMaxBodyBytes < jobs.MaxBatchBytes {
		p.add("HTTP_MAX_BODY_BYTES", "must be at least %d (one NDJSON body of the largest size), got %d", jobs.MaxBatchBytes, c.HTTPMaxBodyBytes)
	}
	checkToken(p, "JOBS_TOKEN", c.JobsToken, "it guards POST /jobs")
	checkToken(p, "ADMIN_TOKEN", c.AdminToken, "it guards the operator actions")
}

// checkRetries checks how failing jobs are retried and run.
func (c Config) checkRetries(p *problems) {
	if c.JobRetryBase <= 0 {
		p.add("JOB_RETRY_BASE", "must be a positive duration such as 1s or 500ms, got %s", c.JobRetryBase)
	}
	if c.JobRetryMax < c.JobRetryBase {
		p.add("JOB_RETRY_MAX", "must be at least JOB_RETRY_BASE (%s), got %s", c.JobRetryBase, c.JobRetryMax)
	}
	if _, err := jobs.ParseFailurePolicy(c.JobOnFailure); err != nil {
		p.add("JOB_ON_FAILURE", "must be park or dead-letter, got %q", c.JobOnFailure)
	}
	if c.JobConcurrency < 1 || c.JobConcurrency > jobs.MaxConcurrency {
		p.add("JOB_CONCURRENCY", "must be between 1 and %d, got %d", jobs.MaxConcurrency, c.JobConcurrency)
	}
	if c.JobIdempotencyTTL < time.Second {
		p.add("JOB_IDEMPOTENCY_TTL", "must be at least 1s (how long an idempotency key outlives its job), got %s", c.JobIdempotencyTTL)
	}
}

// checkJobURL checks the http handler's settings, without echoing the
// URL (it may carry a password) or the token.
func (c Config) checkJobURL(p *problems) {
	u, err := jobs.CheckJobURL(c.JobURL)
	if c.JobURL != "" && err != nil {
		p.add("JOB_URL", "%v", err)
	}
	if c.JobURLCA != "" && u != nil && u.Scheme != "https" {
		p.add("JOB_URL_CA", "is set, but JOB_URL is not an https URL")
	}
	if strings.ContainsFunc(c.JobURLToken, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		p.add("JOB_URL_TOKEN", "must not contain spaces or control characters")
	}
	if c.JobTimeout <= 0 {
		p.add("JOB_TIMEOUT", "must be a positive duration such as 30s or 500ms, got %s", c.JobTimeout)
	}
}

// checkToken checks a bearer token that is set (bearer.Check), never
// echoing it: the message says only what is wrong with it.
func checkToken(p *problems, name, token, guards string) {
	if token == "" {
		return
	}
	err := bearer.Check(token)
	if errors.Is(err, bearer.ErrTooShort) {
		p.add(name, "must be at least %d bytes (%s), got %d; generate one with: openssl rand -hex 32", bearer.MinLen, guards, len(token))
	}
	if errors.Is(err, bearer.ErrBadByte) {
		p.add(name, "must not contain spaces or control characters")
	}
}

// checkRedisURL rejects what go-redis would reject, without echoing the URL:
// it may carry a password.
func checkRedisURL(raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return errors.New("not a valid URL")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("scheme must be redis or rediss, got %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("has no host")
	}
	return nil
}

// checkDistinctServers rejects two URLs that name the same server: Redlock
// over one server counted twice fails with it, yet claims a quorum. Hosts
// compare without case, the default port is 6379, and every loopback
// address counts as one host. A name and an address of one machine are not
// told apart.
func checkDistinctServers(urls []string, p *problems) {
	seen := map[string]int{}
	for i, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Hostname() == "" {
			continue // reported by checkRedisURL
		}
		host, port := strings.ToLower(u.Hostname()), u.Port()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			host = "localhost"
		}
		if port == "" {
			port = "6379"
		}
		server := net.JoinHostPort(host, port)
		if first, dup := seen[server]; dup {
			p.add("REDIS_URLS", "URL %d and URL %d name the same server (%s); Redlock needs independent servers", first+1, i+1, server)
			continue
		}
		seen[server] = i
	}
}

// maxWorkerID bounds WORKER_ID: it is in every log line, record and key
// of the registry.
const maxWorkerID = 128

// workerName reports whether id is a usable worker ID: what Redis accepts
// as a client name (CLIENT SETNAME refuses spaces and anything outside
// '!' to '~'), so a replica is never refused by Redis for its name, and a
// terminal or log shows it as it is.
func workerName(id string) bool {
	if id == "" || len(id) > maxWorkerID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '!' || id[i] > '~' {
			return false
		}
	}
	return true
}
