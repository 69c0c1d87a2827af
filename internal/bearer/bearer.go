package bearer

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// MinLen is the shortest token, in bytes: a token is compared in constant
// time, but a short one can still be guessed.
const MinLen = 16

// Check's refusals. They never quote the token.
var (
	ErrTooShort = fmt.Errorf("bearer: token shorter than %d bytes", MinLen)
	ErrBadByte  = errors.New("bearer: token with a space or a control character")
)

// Check is nil for a usable token: at least MinLen bytes, none of them a
// space or a control character (it travels in a header).
func Check(token string) error {
	var errs []error
	if len(token) < MinLen {
		errs = append(errs, ErrTooShort)
	}
	if strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		errs = append(errs, ErrBadByte)
	}
	return errors.Join(errs...)
}

// Authorized reports whether r carries "Authorization: Bearer <token>",
// compared in constant time. An empty token authorizes nobody.
func Authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}
