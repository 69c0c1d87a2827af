package lines

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// What Read refuses; an *Error carries them with the line and the limit.
var (
	ErrTooLarge = errors.New("lines: input too large")
	ErrTooMany  = errors.New("lines: too many lines")
	ErrTooLong  = errors.New("lines: line too long")
	ErrNone     = errors.New("lines: no lines")
)

// Limits bounds what Read accepts. Every field must be positive.
type Limits struct {
	// MaxBytes bounds the whole input, line ends included.
	MaxBytes int64
	// MaxLines bounds the non-empty lines.
	MaxLines int
	// MaxLineBytes bounds one line, its line end excluded.
	MaxLineBytes int
}

// Error is why Read refused its input.
type Error struct {
	// Line is the offending line's number, from 1, counting every line of
	// the input; 0 when the whole input is at fault (ErrTooLarge, ErrNone).
	Line int
	// Err is ErrTooLarge, ErrTooMany, ErrTooLong, ErrNone or the check's
	// error.
	Err error
	// Limit is the bound that was passed, for the limits.
	Limit int64
}

func (e *Error) Error() string {
	var s string
	switch e.Err {
	case ErrTooLarge:
		s = "more than " + size(e.Limit) + " in all"
	case ErrTooMany:
		s = "more than " + strconv.FormatInt(e.Limit, 10) + " lines"
	case ErrTooLong:
		s = "longer than " + size(e.Limit)
	case ErrNone:
		s = "no lines (empty lines are skipped)"
	default:
		s = e.Err.Error()
	}
	if e.Line > 0 {
		return "line " + strconv.Itoa(e.Line) + ": " + s
	}
	return s
}

// Unwrap makes errors.Is(err, ErrTooLong) and the like hold.
func (e *Error) Unwrap() error { return e.Err }

// Read reads all of r and returns its non-empty lines, in order. Lines end
// with "\n" or "\r\n", which is not part of the line; the last may end
// without one. Empty lines are skipped (a trailing newline or a blank
// separator is no record) but counted in line numbers. check, when not
// nil, may refuse a line; its error comes back wrapped in an *Error.
//
// The result is all lines or an *Error and none, which is what lets a
// caller write the batch all or nothing.
func Read(r io.Reader, lim Limits, check func(line []byte) error) ([][]byte, error) {
	if lim.MaxBytes <= 0 || lim.MaxLines <= 0 || lim.MaxLineBytes <= 0 {
		return nil, fmt.Errorf("lines: every limit must be positive, got %+v", lim)
	}
	in, err := io.ReadAll(io.LimitReader(r, lim.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("lines: read: %w", err)
	}
	if int64(len(in)) > lim.MaxBytes {
		return nil, &Error{Err: ErrTooLarge, Limit: lim.MaxBytes}
	}
	var out [][]byte
	for n := 1; len(in) > 0; n++ {
		var line []byte
		line, in, _ = bytes.Cut(in, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			continue
		case len(out) == lim.MaxLines:
			return nil, &Error{Line: n, Err: ErrTooMany, Limit: int64(lim.MaxLines)}
		case len(line) > lim.MaxLineBytes:
			return nil, &Error{Line: n, Err: ErrTooLong, Limit: int64(lim.MaxLineBytes)}
		}
		if check != nil {
			if err := check(line); err != nil {
				return nil, &Error{Line: n, Err: err}
			}
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return nil, &Error{Err: ErrNone}
	}
	return out, nil
}

// size writes a byte count in MiB or KiB when it is a whole number of them.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
