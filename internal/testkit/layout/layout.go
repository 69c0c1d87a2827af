package layout

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// isName matches a layout name: K, L or J, then ":" and more, or nothing.
var isName = regexp.MustCompile(`^[KLJ](:\S*)?$`)

// Read returns the names of the layout in the Go file at path, in order.
func Read(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "//\t")
		if !ok || line == "" || line[0] == ' ' {
			continue // not a block line, or the continuation of one
		}
		if name := strings.Fields(line)[0]; isName.MatchString(name) {
			names = append(names, name)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("layout: no layout lines in %s", path)
	}
	return names, nil
}

// Expand is the key that name stands for, given the tagged key k (K) and
// the lease's lock key l (L; J is L:jobs), with each <placeholder> in it
// replaced by vals[placeholder] (left as it is when vals has none).
func Expand(name, k, l string, vals map[string]string) string {
	var out string
	switch {
	case strings.HasPrefix(name, "K"):
		out = k + name[1:]
	case strings.HasPrefix(name, "L"):
		out = l + name[1:]
	case strings.HasPrefix(name, "J"):
		out = l + ":jobs" + name[1:]
	default:
		return name
	}
	for p, v := range vals {
		out = strings.ReplaceAll(out, "<"+p+">", v)
	}
	return out
}
