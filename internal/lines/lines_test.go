package lines

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

var small = Limits{MaxBytes: 64, MaxLines: 3, MaxLineBytes: 8}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"one line without a newline", "a", []string{"a"}},
		{"a trailing newline adds nothing", "a\nb\n", []string{"a", "b"}},
		{"CRLF ends a line too", "a\r\nb\r\n", []string{"a", "b"}},
		{"empty lines are skipped", "\n\na\n\r\n\nb\n\n", []string{"a", "b"}},
		{"spaces are content", " \na b\n", []string{" ", "a b"}},
		{"a lone CR inside a line stays", "a\rb\n", []string{"a\rb"}},
		{"at the limits", "12345678\n2\n3", []string{"12345678", "2", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tc.in), small, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(strs(got), tc.want) {
				t.Fatalf("Read(%q) = %q, want %q", tc.in, strs(got), tc.want)
			}
		})
	}
}

func TestReadRefuses(t *testing.T) {
	notX := func(l []byte) error {
		if l[0] == 'x' {
			return errors.New("starts with x")
		}
		return nil
	}
	for _, tc := range []struct {
		name, in string
		want     error
		line     int
		msg      string
	}{
		{"nothing", "", ErrNone, 0, "no lines (empty lines are skipped)"},
		{"only empty lines", "\n\r\n\n", ErrNone, 0, "no lines (empty lines are skipped)"},
		{"too many lines, counting empty ones", "a\n\nb\nc\n\nd\n", ErrTooMany, 6, "line 6: more than 3 lines"},
		{"a line too long in the middle", "a\n123456789\nc", ErrTooLong, 2, "line 2: longer than 8 bytes"},
		{"too large in all", strings.Repeat("\n", 65), ErrTooLarge, 0, "more than 64 bytes in all"},
		{"the check refuses a line", "a\n\nxb\n", nil, 3, "line 3: starts with x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tc.in), small, notX)
			var e *Error
			if got != nil || !errors.As(err, &e) || e.Line != tc.line || err.Error() != tc.msg {
				t.Fatalf("Read(%q) = %q, %v; want no lines and %q", tc.in, strs(got), err, tc.msg)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v is not %v", err, tc.want)
			}
		})
	}
}

func TestReadLimitsMustBePositive(t *testing.T) {
	if _, err := Read(strings.NewReader("a"), Limits{MaxBytes: 1, MaxLines: 1}, nil); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Fatalf("Read with MaxLineBytes 0: %v", err)
	}
}

// TestReadStopsAtTheLimit: an endless input is read only up to MaxBytes+1.
func TestReadStopsAtTheLimit(t *testing.T) {
	r := &endless{}
	if _, err := Read(r, small, nil); !errors.Is(err, ErrTooLarge) || r.n > small.MaxBytes+512 {
		t.Fatalf("Read of an endless input: %v after %d bytes", err, r.n)
	}
}

type endless struct{ n int64 }

func (r *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	r.n += int64(len(p))
	return len(p), nil
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{8 << 20: "8 MiB", 1 << 20: "1 MiB", 1536: "1536 bytes", 2048: "2 KiB", 5: "5 bytes"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}

func strs(b [][]byte) []string {
	if b == nil {
		return nil
	}
	s := make([]string, len(b))
	for i := range b {
		s[i] = string(b[i])
	}
	return s
}
