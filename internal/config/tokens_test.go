package config

import (
	"errors"
	"strings"
	"testing"
)

// TestTokens: a short JOBS_TOKEN or ADMIN_TOKEN, or one with a space, is
// refused with an error naming the variable and never quoting the token;
// a good one is accepted and shown only as [redacted].
func TestTokens(t *testing.T) {
	for _, name := range []string{"JOBS_TOKEN", "ADMIN_TOKEN"} {
		for _, tc := range []struct {
			name, token, want string
		}{
			{"short", "short-secret", "at least 16 bytes"},
			{"space", "a-long-enough-token with-space", "spaces or control characters"},
			{"control", "a-long-enough-token\x01tail", "spaces or control characters"},
		} {
			t.Run(name+" "+tc.name, func(t *testing.T) {
				_, err := Load(Getenv([]string{name + "=" + tc.token}))
				var ce *Error
				if !errors.As(err, &ce) || ce.Var != name || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want a %s error saying %q", err, name, tc.want)
				}
				if strings.Contains(err.Error(), tc.token) {
					t.Errorf("the error quotes the token: %v", err)
				}
			})
		}
		const good = "0123456789abcdef-token"
		c, err := Load(Getenv([]string{name + "=" + good}))
		if err != nil {
			t.Fatal(err)
		}
		if s := c.String(); strings.Contains(s, good) || !strings.Contains(s, name+"=[redacted]") {
			t.Errorf("String shows the token or does not name %s: %s", name, s)
		}
	}
}

// TestScrub: every secret the configuration holds, the URL passwords in
// both spellings among them, is taken out of text.
func TestScrub(t *testing.T) {
	c, err := Load(Getenv([]string{
		"REDIS_URLS=redis://u:p%40ss-word@a:1,redis://:pw-two@b:1,redis://c:1",
		"JOBS_TOKEN=jobs-tok-1234567890", "ADMIN_TOKEN=admin-token-0123456789",
	}))
	if err != nil {
		t.Fatal(err)
	}
	in := "dial redis://u:p%40ss-word@a:1: p@ss-word pw-two jobs-tok-1234567890 admin-token-0123456789 ok"
	out := c.Scrub(in)
	for _, secret := range []string{"p@ss-word", "p%40ss-word", "pw-two", "jobs-tok-1234567890", "admin-token-0123456789"} {
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
