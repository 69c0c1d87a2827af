// Package redact removes secrets from text that leaves the process (an
// error in the fleet registry, a string the dashboard sends) by where
// they stand: the password of a URL's user information, the credentials
// of an Authorization header (Bearer, Basic), the value of a setting
// whose name says it is secret (password=..., JOBS_TOKEN=...).
//
// It does not find a secret that stands nowhere it knows, such as a token
// a service quotes in free text. For those, Secrets searches for the
// values its caller knows, as a last guard, but only values of at least
// MinLiteral bytes: searching for a short one ("pw") would mangle
// unrelated text and, by where the mark lands, reveal the secret.
package redact
