package dashboard

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	r := newRedactor("s3cr3t-admin-token-value", "p@ss word/x-0123456", "short-pw")
	for _, tc := range []struct{ in, want string }{
		{"plain error, nothing secret", "plain error, nothing secret"},
		{"dial redis://default:hunter2@10.0.0.5:6379", "dial redis://default:[redacted]@10.0.0.5:6379"},
		{"rediss://:onlypass@host:6380/0", "rediss://:[redacted]@host:6380/0"},
		{"redis://user@host:6379 (no password)", "redis://user@host:6379 (no password)"},
		{"Authorization: Bearer abc.def-ghi", "Authorization: Bearer [redacted]"},
		{"basic dXNlcjpwYXNz rejected", "basic [redacted] rejected"},
		{"password=hunter2 user=bob", "password=[redacted] user=bob"},
		{`secret: "two words"`, `secret: [redacted]`},
		{"API_KEY=abc123,next", "API_KEY=[redacted],next"},
		{"stale token: 41 < epoch 42", "stale token: 41 < epoch 42"},
		{"token=abc123", "token=[redacted]"},
		{"admin s3cr3t-admin-token-value here", "admin [redacted] here"},
		{"literal p@ss word/x-0123456 and escaped p%40ss+word%2Fx-0123456", "literal [redacted] and escaped [redacted]"},
		// A secret shorter than redact.MinLiteral is found by its place
		// only: searching for it would mark every text that holds its
		// bytes, and so point at it.
		{"redis://:short-pw@h:1 said: not a short-pw", "redis://:[redacted]@h:1 said: not a short-pw"},
	} {
		if got := r.text(tc.in); got != tc.want {
			t.Errorf("text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRedactJSON: every string of an encoded value is scrubbed, numbers
// stay exact, and the result is still JSON of the same shape.
func TestRedactJSON(t *testing.T) {
	r := newRedactor()
	type inner struct {
		Note string `json:"note"`
	}
	v := struct {
		Token int64   `json:"token"`
		List  []inner `json:"list"`
		Map   map[string]string
	}{Token: 9007199254740993, List: []inner{{"password=x1"}}, Map: map[string]string{"k": "Bearer zz"}}
	b, err := r.json(v)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{`"token":9007199254740993`, `"note":"password=[redacted]"`, `"k":"Bearer [redacted]"`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
}
