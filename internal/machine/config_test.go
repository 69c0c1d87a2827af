package machine

import (
	"context"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	nop := func(context.Context) error { return nil }
	return Config{
		Acquire: nop, Renew: nop, Release: nop, StopWork: nop,
		StartWork:     func(func(error)) {},
		RenewInterval: time.Second,
		RetryDelay:    func() time.Duration { return time.Second },
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"no Acquire", func(c *Config) { c.Acquire = nil }, []string{"machine: Acquire is required"}},
		{"no Renew", func(c *Config) { c.Renew = nil }, []string{"machine: Renew is required"}},
		{"no Release", func(c *Config) { c.Release = nil }, []string{"machine: Release is required"}},
		{"no StartWork", func(c *Config) { c.StartWork = nil }, []string{"machine: StartWork is required"}},
		{"no StopWork", func(c *Config) { c.StopWork = nil }, []string{"machine: StopWork is required"}},
		{"no RetryDelay", func(c *Config) { c.RetryDelay = nil }, []string{"machine: RetryDelay is required"}},
		{"zero RenewInterval", func(c *Config) { c.RenewInterval = 0 }, []string{"machine: RenewInterval must be positive"}},
		{"negative RenewInterval", func(c *Config) { c.RenewInterval = -time.Second }, []string{"machine: RenewInterval must be positive"}},
		{"empty", func(c *Config) { *c = Config{} }, []string{
			"Acquire is required", "Renew is required", "Release is required", "StartWork is required",
			"StopWork is required", "RetryDelay is required", "RenewInterval must be positive",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig()
			tt.edit(&cfg)
			m, err := New(cfg)
			if err == nil {
				t.Fatalf("New = %v, nil; want an error", m)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	m, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	if m.log == nil || m.cfg.OnTransition == nil {
		t.Error("Logger and OnTransition defaults not filled")
	}
	if m.State() != Idle {
		t.Errorf("new machine in %v, want idle", m.State())
	}
}
