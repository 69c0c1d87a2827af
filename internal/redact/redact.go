package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mark replaces what is removed.
const Mark = "[redacted]"

var (
	// scheme://user:password@ keeps the user, hides the password.
	urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):[^@\s/]*@`)
	// Bearer abc / Basic abc, as in an Authorization header.
	authScheme = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+`)
	// password=x, secret: "x", api_key=x, JOBS_TOKEN=x, REDIS_SENTINEL_PASSWORD=x
	// ... A value of digits only is kept: "token: 42" is a fencing token,
	// not a credential.
	keyValue = regexp.MustCompile(`(?i)\b([A-Za-z0-9_]*?(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth))(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&"']+)`)
	digits   = regexp.MustCompile(`^[0-9]+$`)
)

// Text returns s with every secret it finds by its place replaced by Mark.
func Text(s string) string {
	s = urlPassword.ReplaceAllString(s, "$1:"+Mark+"@")
	s = authScheme.ReplaceAllString(s, "$1 "+Mark)
	return keyValue.ReplaceAllStringFunc(s, func(m string) string {
		sub := keyValue.FindStringSubmatch(m)
		if digits.MatchString(sub[3]) {
			return m
		}
		return sub[1] + sub[2] + Mark
	})
}

// MinLiteral is the shortest secret Secrets searches for.
const MinLiteral = 16

// Secrets are secret values a caller knows, searched for in text after
// Text as a last guard, as written and URL-encoded. Values shorter than
// MinLiteral are left to Text.
type Secrets struct {
	literals []string
}

// NewSecrets keeps the values of at least MinLiteral bytes.
func NewSecrets(values ...string) Secrets {
	var s Secrets
	for _, v := range values {
		if len(v) < MinLiteral {
			continue
		}
		s.literals = append(s.literals, v)
		if q := url.QueryEscape(v); q != v {
			s.literals = append(s.literals, q)
		}
	}
	return s
}

// Text returns t with every secret found by its place (Text) or, for the
// known values, by itself replaced by Mark.
func (s Secrets) Text(t string) string {
	t = Text(t)
	for _, lit := range s.literals {
		t = strings.ReplaceAll(t, lit, Mark)
	}
	return t
}
