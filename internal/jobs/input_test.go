package jobs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/jobs"
)

// TestCheckKey: a key someone gave is refused when empty, blank, too
// long or holding a control character (a tab, a DEL, a C1 control), and
// accepted otherwise, spaces inside and UTF-8 included.
func TestCheckKey(t *testing.T) {
	for key, want := range map[string]error{
		"":                            jobs.ErrKeyBlank,
		" ":                           jobs.ErrKeyBlank,
		" \u00a0\u3000":               jobs.ErrKeyBlank,
		"a\tb":                        jobs.ErrKeyInvalid,
		"\t":                          jobs.ErrKeyBlank,
		"a\x7f":                       jobs.ErrKeyInvalid,
		"a\u0085b":                    jobs.ErrKeyInvalid,
		"a\nb":                        jobs.ErrKeyInvalid,
		strings.Repeat("k", 1025):     jobs.ErrKeyTooLong,
		strings.Repeat("k", 1024):     nil,
		"customer 7":                  nil,
		" padded ":                    nil,
		"kunde-ü-顧客":                  nil,
		strings.Repeat("é", 1024/2+1): jobs.ErrKeyTooLong,
	} {
		if err := jobs.CheckKey(key); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("CheckKey(%q) = %v, want %v", key, err, want)
		}
	}
}

// TestInputErrorsAreOneClass: every refusal of input is ErrInvalidInput,
// wrapped or not, and keeps its own identity; Redis's errors are not.
func TestInputErrorsAreOneClass(t *testing.T) {
	for _, err := range []error{
		jobs.ErrEmptyPayload, jobs.ErrPayloadTooLarge, jobs.ErrKeyBlank, jobs.ErrKeyTooLong, jobs.ErrKeyInvalid,
		jobs.ErrNoJobs, jobs.ErrTooManyJobs, jobs.ErrBatchTooLarge, jobs.ErrNoKeyField,
		&jobs.BatchError{Index: 2, Err: &jobs.KeyFieldError{Field: "f", Err: jobs.ErrKeyInvalid}},
	} {
		if !errors.Is(err, jobs.ErrInvalidInput) {
			t.Errorf("%v is not ErrInvalidInput", err)
		}
		if strings.Count(err.Error(), "jobs: ") != 1 {
			t.Errorf("%q names the package other than once", err)
		}
	}
	for _, err := range []error{jobs.ErrRedisFull, jobs.ErrNotReplicated, jobs.ErrOutcomeUnknown, jobs.ErrNotFound} {
		if errors.Is(err, jobs.ErrInvalidInput) {
			t.Errorf("%v is ErrInvalidInput", err)
		}
	}
	be := &jobs.BatchError{Index: 2, Err: &jobs.KeyFieldError{Field: "acct", Err: jobs.ErrKeyInvalid}}
	if !errors.Is(be, jobs.ErrKeyInvalid) || be.Error() != `jobs: job 3: key field "acct": ordering key with a control character` {
		t.Errorf("BatchError = %q", be)
	}
}

// TestKeyed: a batch keyed by one key or by each payload's field, checked
// whole; the first bad payload or key is named.
func TestKeyed(t *testing.T) {
	payloads := [][]byte{[]byte(`{"acct":"a"}`), []byte(`{"acct":"b","n":1}`)}
	items, err := jobs.Keyed(payloads, "", "acct")
	if err != nil || len(items) != 2 || items[0].Key != "a" || items[1].Key != "b" || string(items[1].Payload) != `{"acct":"b","n":1}` {
		t.Fatalf("Keyed by field = %+v, %v", items, err)
	}
	items, err = jobs.Keyed(payloads, "k", "")
	if err != nil || items[0].Key != "k" || items[1].Key != "k" {
		t.Fatalf("Keyed by key = %+v, %v", items, err)
	}
	if items, err = jobs.Keyed(payloads, "", ""); err != nil || items[0].Key != "" {
		t.Fatalf("Keyed without a key = %+v, %v", items, err)
	}
	for _, tc := range []struct {
		name       string
		payloads   []string
		key, field string
		want       error
		index      int // of the BatchError; -1 when none
	}{
		{"a line without the field", []string{`{"acct":"a"}`, `{"other":1}`}, "", "acct", jobs.ErrNoKeyField, 1},
		{"a number", []string{`{"acct":5}`}, "", "acct", jobs.ErrNoKeyField, 0},
		{"not an object", []string{`[1]`}, "", "acct", jobs.ErrNoKeyField, 0},
		{"not JSON", []string{`acct`}, "", "acct", jobs.ErrNoKeyField, 0},
		{"an empty key", []string{`{"acct":""}`}, "", "acct", jobs.ErrKeyBlank, 0},
		{"a null key", []string{`{"acct":null}`}, "", "acct", jobs.ErrKeyBlank, 0},
		{"a blank key", []string{`{"acct":"  "}`}, "", "acct", jobs.ErrKeyBlank, 0},
		{"a tab in a key", []string{`{"acct":"x"}`, `{"acct":"a\tb"}`}, "", "acct", jobs.ErrKeyInvalid, 1},
		{"a tab in the key of all", []string{`1`}, "a\tb", "", jobs.ErrKeyInvalid, 0},
		{"a blank key for all", []string{`1`}, " ", "", jobs.ErrKeyBlank, 0},
		{"an empty payload", []string{`1`, ``}, "", "", jobs.ErrEmptyPayload, 1},
		{"no payloads", nil, "", "", jobs.ErrNoJobs, -1},
		{"key and field", []string{`1`}, "k", "f", jobs.ErrInvalidInput, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ps [][]byte
			for _, p := range tc.payloads {
				ps = append(ps, []byte(p))
			}
			items, err := jobs.Keyed(ps, tc.key, tc.field)
			var be *jobs.BatchError
			switch {
			case items != nil || !errors.Is(err, tc.want) || !errors.Is(err, jobs.ErrInvalidInput):
				t.Fatalf("Keyed = %+v, %v; want %v", items, err, tc.want)
			case tc.index >= 0 && (!errors.As(err, &be) || be.Index != tc.index):
				t.Fatalf("Keyed: %v; want a BatchError at %d", err, tc.index)
			case tc.index < 0 && errors.As(err, &be):
				t.Fatalf("Keyed: %v; want no BatchError", err)
			}
		})
	}
	if _, err := jobs.Keyed(slices.Repeat([][]byte{[]byte("x")}, jobs.MaxBatch+1), "", ""); !errors.Is(err, jobs.ErrTooManyJobs) {
		t.Fatalf("Keyed of %d: %v", jobs.MaxBatch+1, err)
	}
}
