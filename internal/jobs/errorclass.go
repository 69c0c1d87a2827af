package jobs

import (
	"regexp"
	"strings"
)

// errorClasses are the kinds of failure ErrorClass tells apart, each
// found by the words the error's own type writes before any output of
// the handler (guest.ExitError, HTTPStatusError, errCut, a panic, ...),
// and named from a closed set, with at most three digits of the message.
var errorClasses = []struct {
	re    *regexp.Regexp
	class string // "%s" takes the first group
}{
	{regexp.MustCompile(`command exited with code (\d{1,3})\b`), "exit code %s"},
	{regexp.MustCompile(`command ended by signal (\d{1,2})\b`), "signal %s"},
	{regexp.MustCompile(`command stopped`), "stopped"},
	{regexp.MustCompile(`http: answered (\d{3})\b`), "http %s"},
	{regexp.MustCompile(`http: request cut at its deadline`), "timeout"},
	{regexp.MustCompile(`http: no answer`), "no answer"},
	{regexp.MustCompile(`handler panicked`), "panic"},
	{regexp.MustCompile(`stale fencing token`), "stale token"},
	{regexp.MustCompile(`deliveries started and none finished`), "unfinished deliveries"},
	{regexp.MustCompile(`the host is out of resources`), "host out of resources"},
	{regexp.MustCompile(`^acquire: `), "acquire failed"},
	{regexp.MustCompile(`^renew: `), "renew failed"},
}

// ErrorClass is what a reader without the admin token may see of a job's
// error (a dead letter's) or a replica's last error: the kind of failure
// ("exit code 3", "signal 9", "http 404", "timeout", "no answer",
// "panic", "stale token", ...; "error" when unknown), never what the
// handler wrote, which follows in the message and may quote a payload (a
// command's stderr, a service's answer, a panic's value). It reads the
// message, as a dead letter keeps only that: the earliest of the typed
// errors' own words, which come before any handler output, decides.
func ErrorClass(msg string) string {
	class, at := "error", len(msg)+1
	for _, c := range errorClasses {
		m := c.re.FindStringSubmatchIndex(msg)
		if m == nil || m[0] >= at {
			continue
		}
		at, class = m[0], c.class
		if len(m) > 2 {
			class = strings.Replace(c.class, "%s", msg[m[2]:m[3]], 1)
		}
	}
	if msg == "" {
		return ""
	}
	return class
}
