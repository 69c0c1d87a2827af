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
// the format's version; a field is name=value, none holding a space):
//
//	due=<ms>         a delayed job's due time, or a schedule's tick's time
//	schedule=<name>  the schedule whose tick the job is
//	idem=<key>       the job's idempotency key
//	from=<id>        the dead letter the job was requeued from
//
// A job's place in its group's order is its due time, or its enqueue
// time without one (step.lua's placeOf). A key has no control character
// (Enqueue refuses them), so it ends at the second newline; the payload
// is the rest, byte for byte.
const entryVersion = "1"

// entryMeta is what an entry's header carries besides the job's ID and
// enqueue time; the zero value carries nothing.
type entryMeta struct {
	due      int64 // unix ms; 0 for none
	schedule string
	idem     string
	from     string
}

// encodeEntry is the entry of job id with key and payload, enqueued at
// ms (unix milliseconds), with m's fields.
func encodeEntry(id string, ms int64, m entryMeta, key string, payload []byte) string {
	var b strings.Builder
	b.Grow(len(id) + len(m.schedule) + len(m.idem) + len(m.from) + len(key) + len(payload) + 64)
	b.WriteString(entryVersion)
	b.WriteByte(' ')
	b.WriteString(id)
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(ms, 10))
	field := func(name, v string) {
		if v != "" {
			b.WriteString(" " + name + "=")
			b.WriteString(v)
		}
	}
	if m.due != 0 {
		field("due", strconv.FormatInt(m.due, 10))
	}
	field("schedule", m.schedule)
	field("idem", m.idem)
	field("from", m.from)
	b.WriteByte('\n')
	b.WriteString(key)
	b.WriteByte('\n')
	b.Write(payload)
	return b.String()
}

// errEntry is the error of an entry that is not in the format above.
var errEntry = errors.New("jobs: malformed queue entry")

// decodeEntry reads an entry into a Job (ID, Key, Payload, EnqueuedAt,
// DueAt, Schedule and its idempotency key) and the dead letter it was
// requeued from, if any.
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
	job = Job{ID: fields[1], Key: key, Payload: []byte(payload), EnqueuedAt: time.UnixMilli(ms)}
	for _, f := range fields[3:] {
		name, v, _ := strings.Cut(f, "=")
		switch name {
		case "from":
			from = v
		case "due":
			due, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Job{}, "", fmt.Errorf("%w: due time %q", errEntry, v)
			}
			job.DueAt = time.UnixMilli(due)
		case "schedule":
			job.Schedule = v
		case "idem":
			job.idem = v
		}
	}
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
