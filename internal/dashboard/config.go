package dashboard

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/lockworker/lockworker/internal/bearer"
)

// Config wires the dashboard to the daemon.
type Config struct {
	// Source gives the snapshots. Required.
	Source Source
	// Actions carries out what an operator asks for. Optional: without it,
	// or without AdminToken, the action endpoints do not exist (404) and
	// the page offers no action.
	Actions Actions
	// AdminToken is the bearer token every action needs (ADMIN_TOKEN).
	// Empty: actions off. Otherwise at least bearer.MinLen bytes with no
	// space or control character (bearer.Check), and Actions is required. It is never
	// sent to a browser and is scrubbed from everything the dashboard
	// sends.
	AdminToken string
	// Partitions is the fleet's partition count (PARTITIONS): with more
	// than one, a step-down must name its partition. Default 1.
	Partitions int
	// Secrets are more values that must never be shown, e.g. the Redis
	// password: scrubbed from every string of every snapshot where they
	// stand (a URL, a header), and wherever they are when at least
	// redact.MinLiteral bytes long (redact.Secrets).
	Secrets []string
	// MinInterval is the least time between two pushes on /events:
	// change notices arriving faster coalesce into one push. Default 250ms.
	MinInterval time.Duration
	// RefreshInterval is how often Run pushes without a change notice, so
	// a missed notice costs at most this long. Default 30s.
	RefreshInterval time.Duration
	// HeartbeatInterval is how often an idle /events stream gets a comment
	// line, so proxies keep it open and dead clients are found. Default 15s.
	HeartbeatInterval time.Duration
	// SnapshotTimeout bounds one Source.Snapshot call. Default 5s.
	SnapshotTimeout time.Duration
	// WriteTimeout bounds one write to an /events client; a client that
	// does not read for this long is dropped. Default 10s.
	WriteTimeout time.Duration
	// MaxStreams bounds concurrent anonymous /events streams; more get
	// 503. Default 64.
	MaxStreams int
	// MaxStreamsPerClient bounds the anonymous /events streams of one
	// client address (the connection's, proxies not trusted); more get
	// 503. Default 4.
	MaxStreamsPerClient int
	// AdminStreams is how many streams past MaxStreams requests bearing
	// AdminToken may open (no per-client bound for them). Default 8.
	AdminStreams int
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// validate reports every bad field at once and fills the defaults.
func (c *Config) validate() error {
	var errs []error
	if c.Source == nil {
		errs = append(errs, errors.New("dashboard: Source is required"))
	}
	if c.AdminToken != "" {
		if err := bearer.Check(c.AdminToken); err != nil {
			errs = append(errs, fmt.Errorf("dashboard: AdminToken: %w", err))
		}
		if c.Actions == nil {
			errs = append(errs, errors.New("dashboard: AdminToken is set but Actions is nil"))
		}
	}
	durations := []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"MinInterval", &c.MinInterval, 250 * time.Millisecond},
		{"RefreshInterval", &c.RefreshInterval, 30 * time.Second},
		{"HeartbeatInterval", &c.HeartbeatInterval, 15 * time.Second},
		{"SnapshotTimeout", &c.SnapshotTimeout, 5 * time.Second},
		{"WriteTimeout", &c.WriteTimeout, 10 * time.Second},
	}
	for _, f := range durations {
		switch {
		case *f.d < 0:
			errs = append(errs, fmt.Errorf("dashboard: %s is %v, want > 0 (0 for the default %v)", f.name, *f.d, f.def))
		case *f.d == 0:
			*f.d = f.def
		}
	}
	for _, f := range []struct {
		name string
		n    *int
		def  int
	}{{"MaxStreams", &c.MaxStreams, 64}, {"MaxStreamsPerClient", &c.MaxStreamsPerClient, 4}, {"AdminStreams", &c.AdminStreams, 8},
		{"Partitions", &c.Partitions, 1}} {
		switch {
		case *f.n < 0:
			errs = append(errs, fmt.Errorf("dashboard: %s is %d, want > 0 (0 for the default %d)", f.name, *f.n, f.def))
		case *f.n == 0:
			*f.n = f.def
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return errors.Join(errs...)
}

// actionsOn says whether the action endpoints exist.
func (c *Config) actionsOn() bool { return c.AdminToken != "" && c.Actions != nil }
