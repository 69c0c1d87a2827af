package redact_test

import (
	"testing"

	"github.com/lockworker/lockworker/internal/redact"
)

// TestText: each secret is found by its place; nothing else changes.
func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain error, nothing secret", "plain error, nothing secret"},
		{"dial redis://default:hunter2@10.0.0.5:6379", "dial redis://default:[redacted]@10.0.0.5:6379"},
		{"rediss://:pw@host:6380/0 and pw elsewhere, upward", "rediss://:[redacted]@host:6380/0 and pw elsewhere, upward"},
		{"redis://user@host:6379 (no password)", "redis://user@host:6379 (no password)"},
		{"Authorization: Bearer abc.def-ghi", "Authorization: Bearer [redacted]"},
		{"basic dXNlcjpwYXNz rejected", "basic [redacted] rejected"},
		{"password=hunter2 user=bob", "password=[redacted] user=bob"},
		{`secret: "two words"`, `secret: [redacted]`},
		{"API_KEY=abc123,next", "API_KEY=[redacted],next"},
		{"JOBS_TOKEN=0123456789abcdef set", "JOBS_TOKEN=[redacted] set"},
		{"REDIS_SENTINEL_PASSWORD=sen", "REDIS_SENTINEL_PASSWORD=[redacted]"},
		{"stale token: 41 < epoch 42", "stale token: 41 < epoch 42"},
		{"WRONGPASS invalid username-password pair", "WRONGPASS invalid username-password pair"},
	} {
		if got := redact.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSecrets: known values of at least MinLiteral bytes are found
// anywhere, as written and URL-encoded; a shorter one only by its place,
// so text that merely contains its bytes is left whole and does not
// point at it.
func TestSecrets(t *testing.T) {
	s := redact.NewSecrets("admin-token-0123456789", "p@ss word/x-0123456", "pw")
	for _, tc := range []struct{ in, want string }{
		{"admin admin-token-0123456789 here", "admin [redacted] here"},
		{"literal p@ss word/x-0123456 and escaped p%40ss+word%2Fx-0123456", "literal [redacted] and escaped [redacted]"},
		{"dial redis://:pw@h:1: the pwd is wrong, upward", "dial redis://:[redacted]@h:1: the pwd is wrong, upward"},
	} {
		if got := s.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
