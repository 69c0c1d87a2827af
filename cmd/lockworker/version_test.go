package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `version` and `--version` need no configuration and print
// the version with the Go toolchain; --json has the same fields.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out strings.Builder
		if err := runCLI(t, args, []string{"LOCK_TTL=not-a-duration"}, &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.HasPrefix(out.String(), "lockworker ") || !strings.Contains(out.String(), "go         "+runtime.Version()) {
			t.Errorf("%v printed:\n%s", args, out.String())
		}
	}
	var out strings.Builder
	if err := runCLI(t, []string{"version", "--json"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	var v struct{ Version, Module, Go string }
	if err := json.Unmarshal([]byte(out.String()), &v); err != nil || v.Version == "" || v.Go != runtime.Version() || v.Module == "" {
		t.Errorf("version --json = %s (%v)", out.String(), err)
	}
}
