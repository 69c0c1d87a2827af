package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/oklog/ulid/v2"
)

// Config is the daemon's configuration. Each field's default is in its tag.
type Config struct {
	// Port serves /healthz, /readyz, /status, /metrics and /jobs.
	Port int `env:"PORT" envDefault:"3000"`
	// RedisURLs: one URL is single-node mode; an odd number >= 3 is Redlock.
	// The first URL also holds the fencing epoch and the job queue.
	RedisURLs []string `env:"REDIS_URLS" envDefault:"redis://127.0.0.1:6379" envSeparator:","`
	// RedisCAFile is a PEM bundle for rediss:// servers with a private CA.
	RedisCAFile string `env:"REDIS_CA_FILE"`
	// LockKey is the Redis key of the lock; related keys share its prefix.
	LockKey string `env:"LOCK_KEY" envDefault:"lockworker:leader"`
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
	LogLevel string `env:"LOG_LEVEL" envDefault:"info"`
	// LogFormat is text or json.
	LogFormat string `env:"LOG_FORMAT" envDefault:"text"`
	// ShutdownTimeout bounds stopping work and releasing the lock on SIGTERM.
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"10s"`

	// JobsToken enables POST /jobs for callers presenting it as a bearer
	// token. Unset: the endpoint is off.
	JobsToken string `env:"JOBS_TOKEN"`
	// JobHandler is log (simulated heavy work) or exec (runs JobCommand).
	JobHandler string `env:"JOB_HANDLER" envDefault:"log"`
	// JobCommand is the command line for the exec handler, split on spaces.
	JobCommand string `env:"JOB_COMMAND"`
	// JobMaxAttempts is how often a failing job runs before dead-lettering.
	JobMaxAttempts int `env:"JOB_MAX_ATTEMPTS" envDefault:"5"`
	// WorkDuration is how long the log handler's simulated work takes.
	WorkDuration time.Duration `env:"WORK_DURATION" envDefault:"1s"`
}

// Error is a configuration error about one variable.
type Error struct {
	Var string
	Msg string
}

func (e *Error) Error() string { return e.Var + ": " + e.Msg }

// Load parses environ ("KEY=value" pairs, as os.Environ returns) and
// validates the result. Errors are *Error values joined with errors.Join.
func Load(environ []string) (Config, error) {
	var c Config
	if err := env.ParseWithOptions(&c, env.Options{Environment: env.ToMap(environ)}); err != nil {
		return Config{}, fromEnvError(err)
	}
	if c.WorkerID == "" {
		c.WorkerID = ulid.Make().String()
	}
	if c.RedisNodeTimeout == 0 && c.LockTTL > 0 {
		c.RedisNodeTimeout = min(c.LockTTL/10, time.Second)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks every field and their relations.
func (c Config) Validate() error {
	var errs []error
	bad := func(v, format string, args ...any) {
		errs = append(errs, &Error{Var: v, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Port < 1 || c.Port > 65535 {
		bad("PORT", "must be between 1 and 65535, got %d", c.Port)
	}
	switch n := len(c.RedisURLs); {
	case n == 0:
		bad("REDIS_URLS", "must name at least one redis:// or rediss:// URL")
	case n == 2:
		bad("REDIS_URLS", "2 nodes survive no failure: use 1 (single node) or an odd number >= 3 (Redlock)")
	case n > 2 && n%2 == 0:
		bad("REDIS_URLS", "Redlock needs an odd number of nodes, got %d", n)
	}
	for i, u := range c.RedisURLs {
		if err := checkRedisURL(u); err != nil {
			bad("REDIS_URLS", "URL %d: %v", i+1, err)
		}
	}
	if strings.TrimSpace(c.LockKey) == "" {
		bad("LOCK_KEY", "must not be empty")
	}
	positive := map[string]time.Duration{
		"LOCK_TTL": c.LockTTL, "RENEW_INTERVAL": c.RenewInterval, "RETRY_INTERVAL": c.RetryInterval,
		"REDIS_NODE_TIMEOUT": c.RedisNodeTimeout, "SHUTDOWN_TIMEOUT": c.ShutdownTimeout, "WORK_DURATION": c.WorkDuration,
	}
	for _, v := range []string{"LOCK_TTL", "RENEW_INTERVAL", "RETRY_INTERVAL", "REDIS_NODE_TIMEOUT", "SHUTDOWN_TIMEOUT"} {
		if positive[v] <= 0 {
			bad(v, "must be a positive duration such as 5s or 500ms, got %s", positive[v])
		}
	}
	if c.WorkDuration < 0 {
		bad("WORK_DURATION", "must not be negative, got %s", c.WorkDuration)
	}
	if c.LockTTL > 0 && c.RenewInterval > 0 && c.RenewInterval >= c.LockTTL/2 {
		bad("RENEW_INTERVAL", "must be below LOCK_TTL/2 (%s) so a failed renew can be retried before the lease ends, got %s", c.LockTTL/2, c.RenewInterval)
	}
	if c.LockTTL > 0 && c.RedisNodeTimeout > 0 && c.RedisNodeTimeout >= c.LockTTL/3 {
		bad("REDIS_NODE_TIMEOUT", "must be below LOCK_TTL/3 (%s), got %s", c.LockTTL/3, c.RedisNodeTimeout)
	}
	if c.ClockDriftFactor < 0 || c.ClockDriftFactor >= 0.5 {
		bad("CLOCK_DRIFT_FACTOR", "must be in [0, 0.5), got %g", c.ClockDriftFactor)
	}
	if strings.TrimSpace(c.WorkerID) == "" || strings.ContainsAny(c.WorkerID, " \t\r\n") {
		bad("WORKER_ID", "must be a non-empty name without spaces")
	}
	if _, err := c.Level(); err != nil {
		bad("LOG_LEVEL", "%v", err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("LOG_FORMAT", "must be text or json, got %q", c.LogFormat)
	}
	switch c.JobHandler {
	case "log":
	case "exec":
		if len(strings.Fields(c.JobCommand)) == 0 {
			bad("JOB_COMMAND", "must be set when JOB_HANDLER=exec")
		}
	default:
		bad("JOB_HANDLER", "must be log or exec, got %q", c.JobHandler)
	}
	if c.JobMaxAttempts < 1 {
		bad("JOB_MAX_ATTEMPTS", "must be at least 1, got %d", c.JobMaxAttempts)
	}
	return errors.Join(errs...)
}

// Level is LogLevel as a slog.Level.
func (c Config) Level() (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(c.LogLevel))
	if err != nil {
		return 0, fmt.Errorf("must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return l, nil
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

// fromEnvError maps caarlos0/env errors, which name Go fields, to errors
// naming the environment variable. Only numbers, durations and booleans can
// fail to parse, so repeating the value reveals no secret.
func fromEnvError(err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	var errs []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			errs = append(errs, &Error{Var: varOf(pe.Name), Msg: "cannot parse: " + pe.Err.Error()})
			continue
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

func varOf(field string) string {
	f, ok := reflect.TypeFor[Config]().FieldByName(field)
	if !ok {
		return field
	}
	name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
	return name
}

// Redacted returns the URLs with any password replaced, for logs and status.
func Redacted(urls []string) []string {
	out := make([]string, len(urls))
	for i, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			out[i] = "(invalid URL)"
			continue
		}
		out[i] = u.Redacted()
	}
	return out
}
