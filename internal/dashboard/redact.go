package dashboard

import (
	"bytes"
	"encoding/json"

	"github.com/lockworker/lockworker/internal/redact"
)

// A redactor scrubs secrets from free text before it leaves the process:
// error messages in a replica's record or a dead letter can quote a Redis
// URL, a header or a config line (found by their place, redact.Text), or
// carry a secret the dashboard was given (the admin token, Config.Secrets:
// searched for as a last guard, since a handler's output is free text).
type redactor struct {
	secrets redact.Secrets
}

func newRedactor(secrets ...string) *redactor {
	return &redactor{secrets: redact.NewSecrets(secrets...)}
}

// text returns s with every secret it recognises replaced.
func (r *redactor) text(s string) string { return r.secrets.Text(s) }

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
