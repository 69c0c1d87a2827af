package deploy_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// instructions returns the Dockerfile's instructions (keyword and rest),
// with continuation lines joined and comments dropped.
func instructions(t *testing.T) [][2]string {
	t.Helper()
	var out [][2]string
	var cur string
	for _, line := range strings.Split(readFile(t, "Dockerfile"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if c, ok := strings.CutSuffix(line, "\\"); ok {
			cur += c + " "
			continue
		}
		cur += line
		kw, rest, _ := strings.Cut(cur, " ")
		out = append(out, [2]string{strings.ToUpper(kw), strings.TrimSpace(rest)})
		cur = ""
	}
	return out
}

// makeBuildFlags is BUILD_FLAGS from the Makefile.
func makeBuildFlags(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^BUILD_FLAGS\s*\?=\s*(.+)$`).FindStringSubmatch(readFile(t, "Makefile"))
	if m == nil {
		t.Fatal("no BUILD_FLAGS in the Makefile")
	}
	return strings.TrimSpace(m[1])
}

// dockerBuild returns the environment assignments and the arguments of the
// Dockerfile's `go build` RUN line, split as sh would split them.
func dockerBuild(t *testing.T) (env, args []string) {
	t.Helper()
	for _, in := range instructions(t) {
		if in[0] != "RUN" || !strings.Contains(in[1], "go build") {
			continue
		}
		words := shellWords(t, in[1])
		i := slices.Index(words, "go")
		if i < 0 || i+1 >= len(words) || words[i+1] != "build" {
			t.Fatalf("cannot read the build line %q", in[1])
		}
		return words[:i], words[i+2:]
	}
	t.Fatal("no RUN ... go build in the Dockerfile")
	return nil, nil
}

// shellWords splits s on spaces, honouring single and double quotes; enough
// for a build line, which has no variables or escapes.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '$' || r == '\\' || r == '&' || r == ';' || r == '|':
			t.Fatalf("build line %q uses shell syntax this test does not follow", s)
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// stage is one FROM of the Dockerfile: its name, its base as written, the
// image the base resolves to (global ARG defaults expanded, stage names
// followed), and its instructions.
type stage struct {
	name, from, image string
	ins               [][2]string
}

// stages splits the Dockerfile into its stages, resolving each base with
// the defaults of the ARGs declared before the first FROM.
func stages(t *testing.T) []stage {
	t.Helper()
	args := map[string]string{}
	var out []stage
	for _, in := range instructions(t) {
		switch {
		case in[0] == "ARG" && len(out) == 0:
			k, v, _ := strings.Cut(in[1], "=")
			args[k] = v
		case in[0] == "FROM":
			from, name, _ := strings.Cut(in[1], " AS ")
			image := os.Expand(from, func(k string) string { return args[k] })
			for _, s := range out {
				if s.name == image {
					image = s.image
				}
			}
			out = append(out, stage{name: strings.TrimSpace(name), from: from, image: image})
		case len(out) > 0:
			out[len(out)-1].ins = append(out[len(out)-1].ins, in)
		}
	}
	return out
}

func TestDockerfileBases(t *testing.T) {
	if regexp.MustCompile(`(?mi)^#\s*syntax\s*=`).MatchString(readFile(t, "Dockerfile")) {
		t.Error("a # syntax= directive makes BuildKit pull a frontend image: air-gapped builds fail")
	}
	ss := stages(t)
	if len(ss) < 3 {
		t.Fatalf("%d stages, want the runtime, prebuilt, build and final stages", len(ss))
	}
	byName := map[string]int{}
	for i, s := range ss {
		byName[s.name] = i
	}
	build, prebuilt := byName["build"], byName["prebuilt"]
	if ss[build].from != "${GO_IMAGE}" || ss[build].image != "golang:1.26" {
		t.Errorf("build stage FROM %s (%s), want ${GO_IMAGE} defaulting to golang:1.26", ss[build].from, ss[build].image)
	}
	final := ss[len(ss)-1]
	if final.image != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("final stage runs on %s, want ${RUNTIME_IMAGE} defaulting to gcr.io/distroless/static-debian12:nonroot", final.image)
	}
	// The air-gapped recipe builds --target prebuilt; the legacy builder
	// runs every stage up to the target, so the Go stage must come later.
	if _, ok := byName["prebuilt"]; !ok || prebuilt > build {
		t.Errorf("the prebuilt stage is missing or after the build stage: the legacy builder would need %s", ss[build].image)
	} else if ss[prebuilt].image != final.image || !slices.Equal(ss[prebuilt].ins, [][2]string{{"COPY", ". /"}}) {
		t.Errorf("prebuilt stage: FROM %s with %v, want the runtime with COPY . / only", ss[prebuilt].image, ss[prebuilt].ins)
	}
}

func TestDockerfile(t *testing.T) {
	ins := instructions(t)
	var users []string
	has := map[string]string{}
	for _, in := range ins {
		if in[0] == "USER" {
			users = append(users, in[1])
		}
		has[in[0]] = in[1]
	}
	if len(users) == 0 {
		t.Error("no USER: the container would run as root")
	}
	for _, u := range users {
		if id, _, _ := strings.Cut(u, ":"); id == "0" || id == "root" {
			t.Errorf("USER %s is root", u)
		}
	}
	env, args := dockerBuild(t)
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("the go build line sets %v, want CGO_ENABLED=0 (a static binary for distroless)", env)
	}
	flags := strings.Join(shellWords(t, makeBuildFlags(t)), "\x00")
	if !strings.Contains(strings.Join(args, "\x00"), flags) {
		t.Errorf("go build %v does not use the Makefile's BUILD_FLAGS %s", args, makeBuildFlags(t))
	}
	for kw, want := range map[string]string{
		"EXPOSE":     "3000",
		"STOPSIGNAL": "SIGTERM",
		"ENTRYPOINT": `["/lockworker"]`,
	} {
		if has[kw] != want {
			t.Errorf("%s %q, want %q", kw, has[kw], want)
		}
	}
	if hc := has["HEALTHCHECK"]; !strings.Contains(hc, `CMD ["/lockworker", "healthcheck"]`) {
		t.Errorf("HEALTHCHECK %q, want exec form CMD [\"/lockworker\", \"healthcheck\"] (there is no shell)", hc)
	}
}

func TestDockerignoreKeepsTheSources(t *testing.T) {
	ignore := readFile(t, ".dockerignore")
	for _, line := range strings.Split(ignore, "\n") {
		line = strings.TrimSpace(line)
		for _, needed := range []string{"go.mod", "go.sum", "cmd", "internal", "*.go"} {
			if line == needed || line == "/"+needed {
				t.Errorf(".dockerignore drops %s, which the build needs", needed)
			}
		}
	}
	if !strings.Contains(ignore, ".env") {
		t.Error(".dockerignore does not keep .env (secrets) out of the build context")
	}
}

// TestStaticBinary builds the binary as the Dockerfile does (same
// environment, same flags) and checks that the ELF file needs no dynamic
// loader or shared library, so it runs on distroless/static.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	env, args := dockerBuild(t)
	out := filepath.Join(t.TempDir(), "lockworker")
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			args[i+1] = out
		}
	}
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", args, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is dynamically linked", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	if f.Section(".symtab") != nil {
		t.Error("the binary has a symbol table: -ldflags='-s -w' was not applied")
	}
	// It runs, with no environment at all, as in an empty container.
	run := exec.Command(out, "help")
	run.Env = []string{}
	if b, err := run.CombinedOutput(); err != nil || !strings.Contains(string(b), "healthcheck") {
		t.Errorf("lockworker help: %v\n%s", err, b)
	}
}
