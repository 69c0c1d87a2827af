package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/lockworker/lockworker/internal/lines"
)

// What a job may carry: the one definition. Enqueue and EnqueueMany check
// every job against it, and so do the command line (lockworker enqueue)
// and POST /jobs (one job, or an NDJSON body) before they reach Redis,
// through CheckKey, CheckIdempotencyKey, CheckItem, CheckBatch, ItemsOf,
// Keyed and BatchLines.

// MaxPayload is the largest job payload, in bytes.
const MaxPayload = 1 << 20

// MaxKey is the longest ordering key, in bytes.
const MaxKey = 1024

// MaxDelay is how far ahead of now a job may be delayed (Item.NotBefore):
// a due time further ahead is refused (ErrTooFarAhead), most likely a
// mistake (a time in milliseconds read as seconds, a year typed wrong).
const MaxDelay = 366 * 24 * time.Hour

// MaxIdempotencyKey is the longest idempotency key, in bytes.
const MaxIdempotencyKey = 255

// MaxBatch is the most jobs one EnqueueMany call adds, and MaxBatchBytes
// the most payload and key bytes. They keep one transaction short for
// Redis (it serves nobody else while it runs) and within the client's read
// and write timeouts, and bound what a request holds in memory.
const (
	MaxBatch      = 1000
	MaxBatchBytes = 8 << 20
)

// BatchLines are the bounds of a batch read one job per line (lockworker
// enqueue --lines, POST /jobs with an NDJSON body): MaxBatch lines of at
// most MaxPayload bytes, MaxBatchBytes in all.
func BatchLines() lines.Limits {
	return lines.Limits{MaxBytes: MaxBatchBytes, MaxLines: MaxBatch, MaxLineBytes: MaxPayload}
}

// ErrInvalidInput is the class of every refusal of what a caller asked to
// enqueue: errors.Is(err, ErrInvalidInput) holds for each error below and
// for a *BatchError or *KeyFieldError. Nothing was enqueued, and the same
// input will be refused again: it is the caller's to fix (an HTTP 400, an
// exit code 2), never a failure of Redis.
var ErrInvalidInput = errors.New("jobs: invalid input")

// inputError is a refusal of input; it is ErrInvalidInput's.
type inputError string

func (e inputError) Error() string { return string(e) }

// Is makes errors.Is(err, ErrInvalidInput) hold.
func (inputError) Is(target error) bool { return target == ErrInvalidInput }

// The refusals of one job: a payload carries 1 to MaxPayload bytes; a key,
// when the job has one, 1 to MaxKey bytes, not only spaces (an empty or
// blank key given by mistake, say an unset variable, would silently drop
// the job's order), without control characters (it travels in an HTTP
// header and a command's environment).
var (
	ErrEmptyPayload    error = inputError("jobs: empty payload")
	ErrPayloadTooLarge error = inputError(fmt.Sprintf("jobs: payload larger than %d bytes (1 MiB)", MaxPayload))
	ErrKeyBlank        error = inputError("jobs: ordering key empty or only spaces")
	ErrKeyTooLong      error = inputError(fmt.Sprintf("jobs: ordering key longer than %d bytes", MaxKey))
	ErrKeyInvalid      error = inputError("jobs: ordering key with a control character")
	// ErrTooFarAhead: a due time more than MaxDelay ahead.
	ErrTooFarAhead error = inputError("jobs: due time more than 366 days ahead")
	// ErrIdempotencyKeyInvalid: an idempotency key given empty, longer
	// than MaxIdempotencyKey, or with a space or a control character.
	ErrIdempotencyKeyInvalid error = inputError(fmt.Sprintf(
		"jobs: idempotency key empty, longer than %d bytes, or with a space or control character", MaxIdempotencyKey))
)

// The refusals of a whole batch (EnqueueMany); nothing of it was enqueued.
var (
	ErrNoJobs        error = inputError("jobs: no jobs to enqueue")
	ErrTooManyJobs   error = inputError(fmt.Sprintf("jobs: more than %d jobs in one batch", MaxBatch))
	ErrBatchTooLarge error = inputError(fmt.Sprintf("jobs: batch larger than %d bytes (8 MiB)", MaxBatchBytes))
	// ErrNoKeyField: a payload that should carry its key (Keyed, KeyField)
	// is no JSON object with a string field of that name.
	ErrNoKeyField error = inputError("jobs: no JSON object with a string field of that name")
)

// BatchError refuses a batch because of one of its jobs (Index, from 0);
// nothing of the batch was enqueued. Err is one of the refusals of one
// job, or a *KeyFieldError.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string {
	return "jobs: job " + strconv.Itoa(e.Index+1) + ": " + trim(e.Err)
}

// Unwrap makes errors.Is(err, ErrPayloadTooLarge) and the like hold.
func (e *BatchError) Unwrap() error { return e.Err }

// KeyFieldError refuses a payload whose field Field should hold its
// ordering key (KeyField): Err is ErrNoKeyField or a refusal of the key.
type KeyFieldError struct {
	Field string
	Err   error
}

func (e *KeyFieldError) Error() string {
	return fmt.Sprintf("jobs: key field %q: %s", e.Field, trim(e.Err))
}

// Unwrap makes errors.Is(err, ErrKeyInvalid) and the like hold.
func (e *KeyFieldError) Unwrap() error { return e.Err }

// CheckKey checks an ordering key someone gave: ErrKeyBlank when it is
// empty or only spaces, ErrKeyTooLong, ErrKeyInvalid. A job without a key
// is an Item whose Key is "", never a key given empty.
func CheckKey(key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return ErrKeyBlank
	case len(key) > MaxKey:
		return ErrKeyTooLong
	case strings.ContainsFunc(key, unicode.IsControl):
		return ErrKeyInvalid
	}
	return nil
}

// CheckIdempotencyKey checks an idempotency key someone gave: 1 to
// MaxIdempotencyKey bytes, no space and no control character (it travels
// in an HTTP header and in the job's entry).
func CheckIdempotencyKey(k string) error {
	if k == "" || len(k) > MaxIdempotencyKey || strings.ContainsFunc(k, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar
	}) {
		return ErrIdempotencyKeyInvalid
	}
	return nil
}

// CheckItem checks one job: its payload, its key and idempotency key when
// it has them, and that its due time is at most MaxDelay ahead of now.
func CheckItem(it Item) error { return checkItem(it, time.Now()) }

func checkItem(it Item, now time.Time) error {
	switch {
	case len(it.Payload) == 0:
		return ErrEmptyPayload
	case len(it.Payload) > MaxPayload:
		return ErrPayloadTooLarge
	case it.NotBefore.Sub(now) > MaxDelay:
		return ErrTooFarAhead
	case it.IdempotencyKey != "" && CheckIdempotencyKey(it.IdempotencyKey) != nil:
		return ErrIdempotencyKeyInvalid
	case it.Key != "":
		return CheckKey(it.Key)
	}
	return nil
}

// CheckBatch checks a batch whole: 1 to MaxBatch items, each one as
// CheckItem does (a *BatchError names the first bad one), at most
// MaxBatchBytes of payloads and keys in all.
func CheckBatch(items []Item) error { return checkBatch(items, time.Now()) }

func checkBatch(items []Item, now time.Time) error {
	switch {
	case len(items) == 0:
		return ErrNoJobs
	case len(items) > MaxBatch:
		return ErrTooManyJobs
	}
	total := 0
	for i, it := range items {
		if err := checkItem(it, now); err != nil {
			return &BatchError{Index: i, Err: err}
		}
		if total += len(it.Payload) + len(it.Key); total > MaxBatchBytes {
			return ErrBatchTooLarge
		}
	}
	return nil
}

// KeyField is the ordering key a payload carries: the string value of its
// top-level field named field, when the payload is a JSON object, checked
// by CheckKey. Its error is a *KeyFieldError.
func KeyField(payload []byte, field string) (string, error) {
	var obj map[string]json.RawMessage
	var key string
	if json.Unmarshal(payload, &obj) != nil || json.Unmarshal(obj[field], &key) != nil {
		return "", &KeyFieldError{Field: field, Err: ErrNoKeyField}
	}
	if err := CheckKey(key); err != nil {
		return "", &KeyFieldError{Field: field, Err: err}
	}
	return key, nil
}

// FieldError refuses a line whose field Field should hold its due time
// or its idempotency key (LineFields): Err is ErrNoTimeField,
// ErrNoIdempotencyField, ErrTooFarAhead or ErrIdempotencyKeyInvalid.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("jobs: field %q: %s", e.Field, trim(e.Err))
}

// Unwrap makes errors.Is(err, ErrTooFarAhead) and the like hold.
func (e *FieldError) Unwrap() error { return e.Err }

// The refusals of a line's field that should hold its due time or its
// idempotency key.
var (
	ErrNoTimeField        error = inputError("jobs: no JSON object with an RFC 3339 time in a string field of that name")
	ErrNoIdempotencyField error = inputError("jobs: no JSON object with a string field of that name")
)

// LineFields says where the jobs of a batch read one per line (a payload
// each) take what is not their payload. Every field named is a top-level
// string field of the line's JSON object.
type LineFields struct {
	// Key is every job's ordering key ("" none); KeyField, the field that
	// holds each line's own (KeyField). Not both.
	Key, KeyField string
	// NotBefore is every job's due time (zero: none); NotBeforeField, the
	// field that holds each line's own, in RFC 3339. Not both.
	NotBefore      time.Time
	NotBeforeField string
	// IdempotencyKeyField is the field that holds each line's
	// idempotency key ("" none; a line without the field has none).
	IdempotencyKeyField string
}

// ItemsOf makes a batch of payloads, each with what f says. It checks the
// batch as CheckBatch does, so a bad payload or field refuses it whole; a
// *BatchError names the first bad one.
func ItemsOf(payloads [][]byte, f LineFields) ([]Item, error) {
	switch {
	case f.Key != "" && f.KeyField != "":
		return nil, inputError("jobs: a key for every job and a key field, not both")
	case !f.NotBefore.IsZero() && f.NotBeforeField != "":
		return nil, inputError("jobs: a due time for every job and a due-time field, not both")
	}
	items := make([]Item, len(payloads))
	for i, p := range payloads {
		it, err := f.item(p)
		if err != nil {
			return nil, &BatchError{Index: i, Err: err}
		}
		items[i] = it
	}
	if err := CheckBatch(items); err != nil {
		return nil, err
	}
	return items, nil
}

// item is one line's job.
func (f LineFields) item(p []byte) (Item, error) {
	it := Item{Key: f.Key, Payload: p, NotBefore: f.NotBefore}
	var err error
	if f.KeyField != "" {
		if it.Key, err = KeyField(p, f.KeyField); err != nil {
			return Item{}, err
		}
	}
	if f.NotBeforeField == "" && f.IdempotencyKeyField == "" {
		return it, nil
	}
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(p, &obj)
	if f.NotBeforeField != "" {
		var v string
		if json.Unmarshal(obj[f.NotBeforeField], &v) != nil {
			return Item{}, &FieldError{Field: f.NotBeforeField, Err: ErrNoTimeField}
		}
		if it.NotBefore, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return Item{}, &FieldError{Field: f.NotBeforeField, Err: ErrNoTimeField}
		}
	}
	if raw, ok := obj[f.IdempotencyKeyField]; ok && f.IdempotencyKeyField != "" {
		if json.Unmarshal(raw, &it.IdempotencyKey) != nil {
			return Item{}, &FieldError{Field: f.IdempotencyKeyField, Err: ErrNoIdempotencyField}
		}
		if err := CheckIdempotencyKey(it.IdempotencyKey); err != nil {
			return Item{}, &FieldError{Field: f.IdempotencyKeyField, Err: err}
		}
	}
	return it, nil
}

// Keyed is ItemsOf with a key for every job or a key field only.
func Keyed(payloads [][]byte, key, field string) ([]Item, error) {
	return ItemsOf(payloads, LineFields{Key: key, KeyField: field})
}
