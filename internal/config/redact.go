package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/lockworker/lockworker/internal/redact"
)

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

// redacted is the value of secret field f as it may be shown: a URL list
// with its passwords replaced, or "[redacted]" for a set token.
func redacted(f reflect.StructField, v reflect.Value) any {
	switch f.Tag.Get("secret") {
	case "url":
		if one, ok := v.Interface().(string); ok {
			if one == "" {
				return ""
			}
			return Redacted([]string{one})[0]
		}
		return Redacted(v.Interface().([]string))
	case "":
		return v.Interface()
	}
	if v.IsZero() {
		return ""
	}
	return "[redacted]"
}

// fields walks the settings in declaration order, by variable name, with
// every secret redacted.
func (c Config) fields(yield func(name string, value any)) {
	rv, rt := reflect.ValueOf(c), reflect.TypeFor[Config]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name == "" {
			continue
		}
		yield(name, redacted(f, rv.Field(i)))
	}
}

// String lists every setting by variable name, secrets redacted, so %v and
// %+v of a Config are safe to log.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("{")
	sep := ""
	c.fields(func(name string, v any) {
		if d, ok := v.(fmt.Stringer); ok {
			v = d.String()
		}
		fmt.Fprintf(&b, "%s%s=%v", sep, name, v)
		sep = " "
	})
	b.WriteString("}")
	return b.String()
}

// GoString makes %#v as safe as %v.
func (c Config) GoString() string { return "config.Config" + c.String() }

// LogValue logs every setting by variable name, secrets redacted.
func (c Config) LogValue() slog.Value {
	var attrs []slog.Attr
	c.fields(func(name string, v any) {
		if d, ok := v.(fmt.Stringer); ok {
			v = d.String()
		}
		attrs = append(attrs, slog.Any(name, v))
	})
	return slog.GroupValue(attrs...)
}

// Getenv looks variables up in "KEY=value" pairs (as os.Environ returns),
// for callers that hold an environment rather than a process's own.
func Getenv(environ []string) func(string) string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}

// Secrets are the secret values this configuration holds: the tokens,
// REDIS_SENTINEL_PASSWORD and the passwords in REDIS_URLS and JOB_URL.
func (c Config) Secrets() []string {
	var out []string
	urls := c.RedisURLs
	if c.JobURL != "" {
		urls = append(slices.Clip(urls), c.JobURL)
	}
	for _, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.User == nil {
			continue
		}
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, pw)
		}
	}
	for _, secret := range []string{c.JobsToken, c.AdminToken, c.JobURLToken, c.RedisSentinelPassword} {
		if secret != "" {
			out = append(out, secret)
		}
	}
	return out
}

// Scrub removes secrets from text that leaves the process outside the
// logs (the fleet registry's lastError): by their place (redact.Text: a
// URL's password, an Authorization header, NAME=value), then, as a last
// guard for a secret quoted in free text, the values of Secrets long
// enough to search for (redact.Secrets). A short Redis password is found
// by its place only: searching for "pw" would mark every text that holds
// those bytes, and so point at it.
func (c Config) Scrub(s string) string { return redact.NewSecrets(c.Secrets()...).Text(s) }

// RedisURLsRedacted is REDIS_URLS without passwords, for logs and status.
func (c Config) RedisURLsRedacted() []string { return Redacted(c.RedisURLs) }
