package dashboard

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
)

const redacted = "[redacted]"

// A redactor scrubs secrets from free text before it leaves the process:
// error messages in a replica's record or a dead letter can quote a Redis
// URL, a header or a config line. It knows the literal secrets it was
// given and three shapes secrets come in; it cannot know a secret of
// another shape that nobody named.
type redactor struct {
	literals []string
}

var (
	// scheme://user:password@ keeps the user, hides the password.
	urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):[^@\s/]*@`)
	// Bearer abc / Basic abc, as in an Authorization header.
	authScheme = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+`)
	// password=x, secret: "x", api_key=x ... A value of digits only is
	// kept: "token: 42" is a fencing token, not a credential.
	keyValue = regexp.MustCompile(`(?i)\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&"']+)`)
	digits   = regexp.MustCompile(`^[0-9]+$`)
)

func newRedactor(secrets ...string) *redactor {
	r := &redactor{}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		r.literals = append(r.literals, s)
		if q := url.QueryEscape(s); q != s {
			r.literals = append(r.literals, q)
		}
	}
	return r
}

// text returns s with every secret it recognises replaced.
func (r *redactor) text(s string) string {
	for _, lit := range r.literals {
		s = strings.ReplaceAll(s, lit, redacted)
	}
	s = urlPassword.ReplaceAllString(s, "$1:"+redacted+"@")
	s = authScheme.ReplaceAllString(s, "$1 "+redacted)
	return keyValue.ReplaceAllStringFunc(s, func(m string) string {
		sub := keyValue.FindStringSubmatch(m)
		if digits.MatchString(sub[3]) {
			return m
		}
		return sub[1] + sub[2] + redacted
	})
}

// json encodes v and redacts every string in it, whatever field it is in,
// so a field added later is covered without a change here.
func (r *redactor) json(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // tokens stay exact
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return json.Marshal(r.walk(tree))
}

func (r *redactor) walk(v any) any {
	switch v := v.(type) {
	case string:
		return r.text(v)
	case []any:
		for i := range v {
			v[i] = r.walk(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = r.walk(v[k])
		}
	}
	return v
}
