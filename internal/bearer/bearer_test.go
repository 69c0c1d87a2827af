package bearer_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/bearer"
)

func TestCheck(t *testing.T) {
	for token, want := range map[string][]error{
		strings.Repeat("k", bearer.MinLen):   nil,
		strings.Repeat("k", bearer.MinLen-1): {bearer.ErrTooShort},
		"tok3n":                              {bearer.ErrTooShort},
		"0123456789abcdef 0123":              {bearer.ErrBadByte},
		"0123456789abcdef\x7f":               {bearer.ErrBadByte},
		"a\tb":                               {bearer.ErrTooShort, bearer.ErrBadByte},
	} {
		err := bearer.Check(token)
		if (err == nil) != (want == nil) {
			t.Errorf("Check(%q) = %v, want %v", token, err, want)
		}
		for _, w := range want {
			if !errors.Is(err, w) {
				t.Errorf("Check(%q) = %v, want %v", token, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("Check(%q) quotes the token: %v", token, err)
		}
	}
}

func TestAuthorized(t *testing.T) {
	const token = "0123456789abcdef-token"
	for header, want := range map[string]bool{
		"Bearer " + token:                true,
		"Bearer " + token + "x":          false,
		"bearer " + token:                false,
		"Basic " + token:                 false,
		token:                            false,
		"":                               false,
		"Bearer ":                        false,
		"Bearer  " + token:               false,
		"Bearer " + token[:len(token)-1]: false,
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Authorization", header)
		if got := bearer.Authorized(r, token); got != want {
			t.Errorf("Authorized(%q) = %v, want %v", header, got, want)
		}
	}
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Authorization", "Bearer ")
	if bearer.Authorized(r, "") {
		t.Error("an empty token authorized an empty bearer")
	}
}
