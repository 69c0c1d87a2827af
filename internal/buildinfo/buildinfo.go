package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info is what the binary knows about its own build.
type Info struct {
	// Version is the main module's version, e.g. v1.2.3 or a
	// pseudo-version; "(devel)" when none was recorded.
	Version string `json:"version"`
	// Module is the main module's path.
	Module string `json:"module"`
	// Go is the toolchain that built the binary, e.g. go1.26.8.
	Go string `json:"go"`
	// Revision is the VCS commit, when the build recorded one.
	Revision string `json:"revision,omitempty"`
	// Time is the commit's time (RFC 3339), when recorded.
	Time string `json:"time,omitempty"`
	// Modified says the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Deps lists the modules compiled in, "path version" each.
	Deps []string `json:"deps,omitempty"`
}

// Read returns the build's information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "(devel)"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, Module: bi.Main.Path, Go: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil {
			v += " => " + d.Replace.Path + " " + d.Replace.Version
		}
		in.Deps = append(in.Deps, d.Path+" "+v)
	}
	return in
}

// Short is the version for a record or a status line: the module version,
// and the first 12 characters of the commit when the version says nothing
// more ("(devel)").
func (in Info) Short() string {
	if in.Version == "(devel)" && in.Revision != "" {
		rev := in.Revision[:min(12, len(in.Revision))]
		if in.Modified {
			rev += "-dirty"
		}
		return "(devel) " + rev
	}
	return in.Version
}

// String is the multi-line text `lockworker version` prints.
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lockworker %s\n", in.Version)
	fmt.Fprintf(&b, "module     %s\n", in.Module)
	fmt.Fprintf(&b, "go         %s\n", in.Go)
	if in.Revision != "" {
		mod := ""
		if in.Modified {
			mod = " (modified)"
		}
		fmt.Fprintf(&b, "commit     %s%s\n", in.Revision, mod)
	}
	if in.Time != "" {
		fmt.Fprintf(&b, "committed  %s\n", in.Time)
	}
	if len(in.Deps) > 0 {
		b.WriteString("modules\n")
		for _, d := range in.Deps {
			fmt.Fprintf(&b, "  %s\n", d)
		}
	}
	return b.String()
}
