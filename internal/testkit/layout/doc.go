// Package layout reads the Redis key layout that package keyspace writes
// down once, in its doc.go, so that tests can hold the code and the Lua
// scripts' headers to it instead of repeating it.
//
// A layout line is a line of a tab-indented block of that doc comment
// whose first field is a name: K, L or J, alone or followed by ":...".
// Expand turns such a name into the key it stands for.
//
// Not guaranteed: that the descriptions beside the names are right; only
// the names are read.
package layout
