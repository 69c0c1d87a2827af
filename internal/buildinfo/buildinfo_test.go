package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/lockworker/lockworker", Version: "(devel)"},
		Deps:      []*debug.Module{{Path: "github.com/redis/go-redis/v9", Version: "v9.23.0"}},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.time", Value: "2026-11-23T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	in := fromBuildInfo(bi)
	if in.Go != "go1.26.8" || in.Module != "github.com/lockworker/lockworker" || in.Revision != "0123456789abcdef0123" || !in.Modified {
		t.Fatalf("got %+v", in)
	}
	if got := in.Short(); got != "(devel) 0123456789ab-dirty" {
		t.Errorf("Short = %q", got)
	}
	s := in.String()
	for _, want := range []string{"lockworker (devel)", "go         go1.26.8", "commit     0123456789abcdef0123 (modified)", "github.com/redis/go-redis/v9 v9.23.0"} {
		if !strings.Contains(s, want) {
			t.Errorf("String lacks %q:\n%s", want, s)
		}
	}
	tagged := fromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: bi.Settings})
	if tagged.Short() != "v1.2.3" {
		t.Errorf("a tagged build's Short = %q", tagged.Short())
	}
	if empty := fromBuildInfo(&debug.BuildInfo{}); empty.Version != "(devel)" || empty.Short() != "(devel)" {
		t.Errorf("no version recorded: %+v", empty)
	}
}

// TestReadInTest: a test binary records the toolchain at least.
func TestReadInTest(t *testing.T) {
	if in := Read(); !strings.HasPrefix(in.Go, "go") || in.Version == "" {
		t.Fatalf("Read() = %+v", in)
	}
}
