package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// An entry is how a job is kept in its group's list (keyspace's J:g:<member>):
//
//	1 <id> <enqueued ms>[ <field>...]\n<key>\n<payload>
//
// The first line is the header the scripts read with string.match (1 is
// the format's version; a field is name=value, e.g. from=<id> for a job
// requeued from a dead letter). A key has no control character (Enqueue
// refuses them), so it ends at the second newline; the payload is the
// rest, byte for byte.
const entryVersion = "1"

// encodeEntry is the entry of job id with key and payload, enqueued at
// ms (unix milliseconds); from is the dead letter it was requeued from,
// or "".
func encodeEntry(id string, ms int64, from, key string, payload []byte) string {
	var b strings.Builder
	b.Grow(len(id) + len(from) + len(key) + len(payload) + 32)
	b.WriteString(entryVersion)
	b.WriteByte(' ')
	b.WriteString(id)
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(ms, 10))
	if from != "" {
		b.WriteString(" from=")
		b.WriteString(from)
	}
	b.WriteByte('\n')
	b.WriteString(key)
	b.WriteByte('\n')
	b.Write(payload)
	return b.String()
}

// errEntry is the error of an entry that is not in the format above.
var errEntry = errors.New("jobs: malformed queue entry")

// decodeEntry reads an entry into a Job (ID, Key, Payload, EnqueuedAt)
// and the dead letter it was requeued from, if any.
func decodeEntry(e string) (job Job, from string, err error) {
	head, rest, ok := strings.Cut(e, "\n")
	key, payload, ok2 := strings.Cut(rest, "\n")
	fields := strings.Fields(head)
	if !ok || !ok2 || len(fields) < 3 || fields[0] != entryVersion {
		return Job{}, "", fmt.Errorf("%w: %.40q", errEntry, e)
	}
	ms, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return Job{}, "", fmt.Errorf("%w: enqueue time %q", errEntry, fields[2])
	}
	for _, f := range fields[3:] {
		if v, ok := strings.CutPrefix(f, "from="); ok {
			from = v
		}
	}
	job = Job{ID: fields[1], Key: key, Payload: []byte(payload), EnqueuedAt: time.UnixMilli(ms)}
	return job, from, nil
}

// A group is what the queue keeps in order: a key's jobs, the keyless
// jobs of a queue with one partition (the serial queue), or one keyless
// job of a partitioned queue. Its member is its name in the ready,
// in-flight and parked sets; the member of a keyed group starts with
// memberKey, which no other member does, so no key collides with another
// kind of group.
const (
	memberKey    = "k:"
	memberJob    = "j:"
	memberSerial = "s"
)

// member is the group of a job with key key and ID id, in a queue whose
// keyless jobs are serial (one partition) or not.
func member(key, id string, serial bool) string {
	switch {
	case key != "":
		return memberKey + key
	case serial:
		return memberSerial
	}
	return memberJob + id
}

// keyOf is the key of the group member: "" for a keyless group.
func keyOf(m string) string {
	if k, ok := strings.CutPrefix(m, memberKey); ok {
		return k
	}
	return ""
}
