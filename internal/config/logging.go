package config

import (
	"fmt"
	"log/slog"
	"strings"
)

// LogFormat is how log lines are written, as LOG_FORMAT names it.
type LogFormat string

// The log formats.
const (
	LogText LogFormat = "text" // key=value pairs (slog's TextHandler)
	LogJSON LogFormat = "json" // one JSON object per line (slog's JSONHandler)
)

func (f LogFormat) String() string { return string(f) }

// UnmarshalText reads LOG_FORMAT, refusing a format that does not exist.
func (f *LogFormat) UnmarshalText(text []byte) error {
	v := LogFormat(text)
	if err := v.check(); err != nil {
		return err
	}
	*f = v
	return nil
}

func (f LogFormat) check() error {
	if f != LogText && f != LogJSON {
		return fmt.Errorf("must be text or json, got %q", string(f))
	}
	return nil
}

// LogLevel is the least severe level logged, as LOG_LEVEL names it:
// debug, info, warn or error (slog's names, any case, with an offset such
// as warn+2). It is a slog.Leveler.
type LogLevel slog.Level

// The log levels by name.
const (
	LevelDebug = LogLevel(slog.LevelDebug)
	LevelInfo  = LogLevel(slog.LevelInfo)
	LevelWarn  = LogLevel(slog.LevelWarn)
	LevelError = LogLevel(slog.LevelError)
)

// Level makes a LogLevel a slog.Leveler.
func (l LogLevel) Level() slog.Level { return slog.Level(l) }

// String is the level as LOG_LEVEL writes it: "info", "warn+2".
func (l LogLevel) String() string { return strings.ToLower(slog.Level(l).String()) }

// UnmarshalText reads LOG_LEVEL as slog reads a level's name.
func (l *LogLevel) UnmarshalText(text []byte) error {
	var v slog.Level
	if err := v.UnmarshalText(text); err != nil {
		return fmt.Errorf("must be debug, info, warn or error, got %q", string(text))
	}
	*l = LogLevel(v)
	return nil
}
