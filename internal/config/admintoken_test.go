package config

import (
	"errors"
	"strings"
	"testing"
)

// TestAdminToken: a short token, or one with a space, is refused with an
// error naming ADMIN_TOKEN and never quoting it; a good one is accepted
// and shown only as [redacted].
func TestAdminToken(t *testing.T) {
	for _, tc := range []struct {
		name, token, want string
	}{
		{"short", "short-secret", "at least 16 bytes"},
		{"space", "a-long-enough-token with-space", "spaces or control characters"},
		{"control", "a-long-enough-token\x01tail", "spaces or control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Getenv([]string{"ADMIN_TOKEN=" + tc.token}))
			var ce *Error
			if !errors.As(err, &ce) || ce.Var != "ADMIN_TOKEN" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an ADMIN_TOKEN error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Errorf("the error quotes the token: %v", err)
			}
		})
	}
	const good = "0123456789abcdef-admin"
	c, err := Load(Getenv([]string{"ADMIN_TOKEN=" + good}))
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminToken != good {
		t.Fatalf("AdminToken = %q", c.AdminToken)
	}
	if s := c.String(); strings.Contains(s, good) || !strings.Contains(s, "ADMIN_TOKEN=[redacted]") {
		t.Errorf("String shows the admin token or does not name it: %s", s)
	}
}

// TestScrub: every secret the configuration holds, the URL passwords in
// both spellings among them, is taken out of text.
func TestScrub(t *testing.T) {
	c, err := Load(Getenv([]string{
		"REDIS_URLS=redis://u:p%40ss-word@a:1,redis://:pw-two@b:1,redis://c:1",
		"JOBS_TOKEN=jobs-tok-123", "ADMIN_TOKEN=admin-token-0123456789",
	}))
	if err != nil {
		t.Fatal(err)
	}
	in := "dial redis://u:p%40ss-word@a:1: p@ss-word pw-two jobs-tok-123 admin-token-0123456789 ok"
	out := c.Scrub(in)
	for _, secret := range []string{"p@ss-word", "p%40ss-word", "pw-two", "jobs-tok-123", "admin-token-0123456789"} {
		if strings.Contains(out, secret) {
			t.Errorf("Scrub left %q: %s", secret, out)
		}
	}
	if !strings.HasSuffix(out, " ok") || !strings.Contains(out, "[redacted]") {
		t.Errorf("Scrub changed more than the secrets: %s", out)
	}
	if plain, _ := Load(Getenv(nil)); plain.Scrub("nothing secret") != "nothing secret" {
		t.Error("Scrub changed text without secrets")
	}
}
