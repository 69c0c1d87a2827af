package guest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// baseEnv is what every command gets from the daemon's environment, when
// set: enough to find programs, write to a home, and format text and time.
var baseEnv = []string{"PATH", "HOME", "LANG", "TZ"}

// VarPrefix starts every variable the daemon sets for a job
// (LOCKWORKER_JOB_ID, LOCKWORKER_FENCING_TOKEN, ...).
const VarPrefix = "LOCKWORKER_"

// EnvNameError says why a name cannot be passed through to the command.
type EnvNameError struct {
	Name   string
	Reason string
}

func (e *EnvNameError) Error() string { return fmt.Sprintf("%q %s", e.Name, e.Reason) }

// CheckEnvName reports whether name may be listed in JOB_ENV. Refused: what
// is not a variable name, REDIS_URLS and every REDIS_* variable (URLs and
// credentials), JOBS_TOKEN and ADMIN_TOKEN (the daemon's tokens), and
// LOCKWORKER_* (set by the daemon per job, so passing the daemon's own
// would shadow or fake them).
func CheckEnvName(name string) error {
	bad := func(reason string) error { return &EnvNameError{Name: name, Reason: reason} }
	switch {
	case !isVarName(name):
		return bad("is not a variable name (letters, digits and _, not starting with a digit)")
	case name == "REDIS_URLS" || strings.HasPrefix(name, "REDIS_"):
		return bad("is a Redis setting that can carry credentials; a job's command never gets it")
	case name == "JOBS_TOKEN" || name == "ADMIN_TOKEN":
		return bad("is a daemon token; a job's command never gets it")
	case strings.HasPrefix(name, VarPrefix):
		return bad("is set by the daemon for each job and cannot be passed through")
	}
	return nil
}

func isVarName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Env is the command's whole environment: PATH, HOME, LANG and TZ when set
// in environ, then each name in allow that is set in environ, then vars
// sorted by name. environ is "KEY=value" pairs as os.Environ returns them;
// nothing else of it is passed. allow must have passed CheckEnvName and vars'
// names must start with VarPrefix: New and Run check both.
func Env(environ []string, allow []string, vars map[string]string) []string {
	have := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, dup := have[k]; !dup { // the first wins, as with getenv
				have[k] = v
			}
		}
	}
	var out []string
	var seen []string
	for _, k := range slices.Concat(baseEnv, allow) {
		v, ok := have[k]
		if !ok || slices.Contains(seen, k) {
			continue
		}
		seen = append(seen, k)
		out = append(out, k+"="+v)
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// checkVars refuses a job variable the daemon could not have meant: one
// outside LOCKWORKER_*, or not a name.
func checkVars(vars map[string]string) error {
	for k := range vars {
		if !strings.HasPrefix(k, VarPrefix) || !isVarName(k) {
			return fmt.Errorf("guest: job variable %q must be a name starting with %s", k, VarPrefix)
		}
	}
	return nil
}
