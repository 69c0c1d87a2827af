package keyspace

import "strings"

// TaggedKey is the key for LOCK_KEY k with a Redis hash tag: k itself when
// it already carries one (a non-empty "{...}"), else "{k}". Names built
// from it share its hash slot. ValidLockKey says whether k can be tagged.
func TaggedKey(k string) string {
	if HashTag(k) != "" {
		return k
	}
	return "{" + k + "}"
}

// ValidLockKey reports whether TaggedKey(k) carries a hash tag: k is not
// empty and, when it has no tag of its own, does not start with '}' (which
// would make "{k}" start with the empty tag "{}").
func ValidLockKey(k string) bool { return k != "" && HashTag(TaggedKey(k)) != "" }

// HashTag is the part of key that Redis Cluster hashes when it is not the
// whole key: the text between the first '{' and the first '}' after it,
// when that text is not empty. "" means the whole key is hashed.
func HashTag(key string) string {
	s := strings.IndexByte(key, '{')
	if s < 0 {
		return ""
	}
	e := strings.IndexByte(key[s+1:], '}')
	if e <= 0 {
		return ""
	}
	return key[s+1 : s+1+e]
}
