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

// TestScrub: secrets are taken out of text by their place (a URL's
// password, an Authorization header, a secret variable's value), and the
// tokens, long enough to search for, wherever they are; a short Redis
// password is not searched for, so text that merely holds its bytes is
// left whole instead of pointing at it.
func TestScrub(t *testing.T) {
	c, err := Load(Getenv([]string{
		"REDIS_URLS=redis://u:p%40ss@a:1,redis://:pw@b:1,redis://c:1",
		"JOBS_TOKEN=jobs-tok-1234567890", "ADMIN_TOKEN=admin-token-0123456789",
	}))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"dial redis://u:p%40ss@a:1 and redis://:pw@b:1: refused": "dial redis://u:[redacted]@a:1 and redis://:[redacted]@b:1: refused",
		"sent Authorization: Bearer jobs-tok-1234567890":         "sent Authorization: Bearer [redacted]",
		"JOBS_TOKEN=jobs-tok-1234567890 ADMIN_TOKEN=x":           "JOBS_TOKEN=[redacted] ADMIN_TOKEN=[redacted]",
		"echoed jobs-tok-1234567890 and admin-token-0123456789":  "echoed [redacted] and [redacted]",
		"the pwd is upward of p@ss; WRONGPASS":                   "the pwd is upward of p@ss; WRONGPASS",
	} {
		if got := c.Scrub(in); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
		}
	}
	if plain, _ := Load(Getenv(nil)); plain.Scrub("nothing secret") != "nothing secret" {
		t.Error("Scrub changed text without secrets")
	}
}
