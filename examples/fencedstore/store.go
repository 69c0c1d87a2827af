package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Write is one job's write, as a request from lockworker's http handler
// asks for it.
type Write struct {
	Job   string `json:"job"`
	Token int64  `json:"token"`
	// Partition is the job's partition (Lockworker-Partition; 0 without
	// partitions): each partition has its own leadership and tokens, so
	// each has its own fence.
	Partition int    `json:"partition,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	Worker    string `json:"worker,omitempty"`
	Payload   string `json:"payload,omitempty"`
}

// Record is a write the store applied (or, in Data.Rejected, refused).
type Record struct {
	Write
	Seq   int64     `json:"seq"`             // applied: its place among the applied writes, from 1
	At    time.Time `json:"at"`              // when the store took it
	Fence int64     `json:"fence,omitempty"` // rejected: the fence it was below
}

// Data is everything the store holds, as GET /data shows it.
type Data struct {
	// Fences is, per partition, the highest fencing token any applied
	// write of that partition carried (a fleet without partitions has
	// only partition 0).
	Fences map[int]int64 `json:"fences"`
	// Applied counts the applied writes.
	Applied int64 `json:"applied"`
	// Records is each job's latest applied write, by job ID: the data the
	// fence protects.
	Records map[string]Record `json:"records"`
	// History is the last applied writes, in the order they were applied
	// (at most historySize).
	History []Record `json:"history"`
	// Rejected is the last writes refused as stale (at most historySize).
	// Kept in memory only.
	Rejected []Record `json:"rejected"`
}

// historySize bounds History and Rejected.
const historySize = 1000

// ErrStale is Apply's refusal of a token below the fence.
var ErrStale = errors.New("stale fencing token")

// Store keeps the records and their fence. The fence check, the fence's
// raise and the write it protects happen under one mutex, so no other
// write can come between them; with a data file, they are saved together
// in one file replaced by rename, so a crash keeps both or neither.
type Store struct {
	mu   sync.Mutex
	data Data
	file string // "" keeps everything in memory
	now  func() time.Time
}

// Open returns a store kept in file, loaded from it when it exists; an
// empty file name keeps the store in memory (it starts empty, fence 0,
// after each restart).
func Open(file string) (*Store, error) {
	s := &Store{file: file, now: time.Now, data: Data{Fences: map[int]int64{}, Records: map[string]Record{}}}
	if file == "" {
		return s, nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &s.data); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if s.data.Records == nil {
		s.data.Records = map[string]Record{}
	}
	if s.data.Fences == nil {
		s.data.Fences = map[int]int64{}
	}
	return s, nil
}

// Apply applies w unless its token is below its partition's fence:
// Kleppmann's rule.
// An equal token is the same leadership writing again (a retry, or the
// next job); a higher one raises the fence. It returns the fence after
// the call, and ErrStale (with the fence it was below) when it refused.
func (s *Store) Apply(w Write) (fence int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fence, had0 := s.data.Fences[w.Partition]
	if w.Token < fence {
		s.data.Rejected = appendBounded(s.data.Rejected, Record{Write: w, At: s.now(), Fence: fence})
		return fence, ErrStale
	}
	applied, history := s.data.Applied, s.data.History
	prev, had := s.data.Records[w.Job]
	r := Record{Write: w, Seq: applied + 1, At: s.now()}
	s.data.Fences[w.Partition] = w.Token
	s.data.Applied++
	s.data.Records[w.Job] = r
	s.data.History = appendBounded(s.data.History, r)
	if err := s.save(); err != nil {
		// Neither the write nor the fence: as before the call.
		s.data.Applied, s.data.History = applied, history
		if had0 {
			s.data.Fences[w.Partition] = fence
		} else {
			delete(s.data.Fences, w.Partition)
		}
		if had {
			s.data.Records[w.Job] = prev
		} else {
			delete(s.data.Records, w.Job)
		}
		return fence, err
	}
	return w.Token, nil
}

// Snapshot returns a copy of the data.
func (s *Store) Snapshot() Data {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.data
	d.Fences = make(map[int]int64, len(s.data.Fences))
	for k, v := range s.data.Fences {
		d.Fences[k] = v
	}
	d.Records = make(map[string]Record, len(s.data.Records))
	for k, v := range s.data.Records {
		d.Records[k] = v
	}
	d.History = append([]Record{}, d.History...)
	d.Rejected = append([]Record{}, d.Rejected...)
	return d
}

// save writes the data to a temporary file, syncs it, and renames it over
// the data file: the old state or the new one survives a crash, never a
// mix.
func (s *Store) save() error {
	if s.file == "" {
		return nil
	}
	b, err := json.Marshal(Data{Fences: s.data.Fences, Applied: s.data.Applied, Records: s.data.Records, History: s.data.History})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.file), filepath.Base(s.file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing left to remove
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), s.file); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(s.file))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

func appendBounded(rs []Record, r Record) []Record {
	rs = append(rs, r)
	if len(rs) > historySize {
		rs = append([]Record{}, rs[len(rs)-historySize:]...)
	}
	return rs
}
