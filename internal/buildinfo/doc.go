// Package buildinfo says which lockworker this is, from what the Go
// toolchain recorded in the binary (runtime/debug.ReadBuildInfo): the main
// module's version, the Go version that built it and, when it was built
// from a git checkout, the commit.
//
// Guaranteed: Read never fails; a field the binary does not record is
// empty, and Version falls back to "(devel)" rather than to nothing.
//
// Not guaranteed: a meaningful version for a build outside a tagged
// checkout. `go build` in a git checkout records a pseudo-version (with
// "+dirty" when the tree had changes); a build without VCS data (a
// container build context without .git) records "(devel)".
package buildinfo
