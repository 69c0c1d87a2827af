package deploy_test

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lockworker/lockworker/internal/config"
)

// root is the repository root, relative to this package's directory.
const root = ".."

type composeFile struct {
	Services map[string]service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
}

type service struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []any             `yaml:"ports"`
	Expose      []string          `yaml:"expose"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	StopSignal      string      `yaml:"stop_signal"`
	StopGracePeriod string      `yaml:"stop_grace_period"`
	ReadOnly        bool        `yaml:"read_only"`
	CapDrop         []string    `yaml:"cap_drop"`
	SecurityOpt     []string    `yaml:"security_opt"`
	User            string      `yaml:"user"`
	Volumes         []string    `yaml:"volumes"`
	Healthcheck     healthcheck `yaml:"healthcheck"`
}

type healthcheck struct {
	Test []string `yaml:"test"`
}

func load(t *testing.T, path string) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(false)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// composeFiles are every compose file with the Redis services its worker
// must find in REDIS_URLS.
var composeFiles = []struct {
	path   string
	redis  []string
	expect string
}{
	{"docker-compose.yml", []string{"redis"}, "redis://redis:6379"},
	{"deploy/docker-compose.redlock.yml", []string{"redis-1", "redis-2", "redis-3"},
		"redis://redis-1:6379,redis://redis-2:6379,redis://redis-3:6379"},
}

// interpolate resolves ${VAR:-default} and ${VAR} the way compose does
// with no .env: to the default, or empty.
var interpRE = regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)(?::?-([^}]*))?\}`)

func interpolate(s string) string {
	return interpRE.ReplaceAllString(s, "$2")
}

// configVars maps each variable of config.Config to its envDefault.
func configVars(t *testing.T) map[string]string {
	t.Helper()
	vars := map[string]string{}
	typ := reflect.TypeFor[config.Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name == "" {
			continue
		}
		vars[name] = f.Tag.Get("envDefault")
	}
	if len(vars) < 10 {
		t.Fatalf("found only %d env tags on config.Config", len(vars))
	}
	return vars
}

// envExample maps each variable of .env.example to its value.
func envExample(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	var comment bool
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			comment = false
		case strings.HasPrefix(line, "#"):
			comment = true
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf(".env.example:%d: not KEY=value: %q", n, line)
			}
			if _, dup := vars[k]; dup {
				t.Errorf(".env.example:%d: %s twice", n, k)
			}
			if !comment {
				t.Errorf(".env.example:%d: %s has no comment line above it", n, k)
			}
			vars[k] = v
			comment = false
		}
	}
	return vars
}

func TestWorkerServices(t *testing.T) {
	shutdown, err := time.ParseDuration(configVars(t)["SHUTDOWN_TIMEOUT"])
	if err != nil {
		t.Fatal(err)
	}
	for _, cf := range composeFiles {
		t.Run(cf.path, func(t *testing.T) {
			c := load(t, cf.path)
			w, ok := c.Services["worker"]
			if !ok {
				t.Fatal("no worker service")
			}
			if w.Build == nil {
				t.Error("worker is not built from the Dockerfile (build:)")
			}
			if len(w.Ports) > 0 {
				t.Errorf("worker maps host ports %v; --scale worker=3 would clash", w.Ports)
			}
			if !slices.Contains(w.Expose, "3000") {
				t.Errorf("worker exposes %v, want 3000", w.Expose)
			}
			if w.StopSignal != "SIGTERM" {
				t.Errorf("stop_signal = %q, want SIGTERM", w.StopSignal)
			}
			grace, err := time.ParseDuration(w.StopGracePeriod)
			if err != nil {
				t.Fatalf("stop_grace_period %q: %v", w.StopGracePeriod, err)
			}
			if s, ok := w.Environment["SHUTDOWN_TIMEOUT"]; ok {
				if shutdown, err = time.ParseDuration(interpolate(s)); err != nil {
					t.Fatalf("SHUTDOWN_TIMEOUT %q: %v", s, err)
				}
			}
			if grace <= shutdown {
				t.Errorf("stop_grace_period %s is not longer than SHUTDOWN_TIMEOUT %s: Docker would SIGKILL a leader mid-release", grace, shutdown)
			}
			if !w.ReadOnly {
				t.Error("worker is not read_only")
			}
			if !slices.Equal(w.CapDrop, []string{"ALL"}) {
				t.Errorf("cap_drop = %v, want [ALL]", w.CapDrop)
			}
			if !slices.Contains(w.SecurityOpt, "no-new-privileges:true") {
				t.Errorf("security_opt = %v, want no-new-privileges:true", w.SecurityOpt)
			}
			uid, _, _ := strings.Cut(w.User, ":")
			if n, err := strconv.Atoi(uid); uid == "" || uid == "root" || (err == nil && n == 0) {
				t.Errorf("user = %q, want a non-root user", w.User)
			}
			if !slices.Equal(w.Healthcheck.Test, []string{"CMD", "/lockworker", "healthcheck"}) {
				t.Errorf("healthcheck = %v, want [CMD /lockworker healthcheck]", w.Healthcheck.Test)
			}
			if got := w.Environment["REDIS_URLS"]; got != cf.expect {
				t.Errorf("REDIS_URLS = %q, want %q", got, cf.expect)
			}
			for _, r := range cf.redis {
				if w.DependsOn[r].Condition != "service_healthy" {
					t.Errorf("worker does not wait for %s to be healthy", r)
				}
			}
			// The settings compose passes must be valid as they stand.
			var env []string
			for k, v := range w.Environment {
				env = append(env, k+"="+interpolate(v))
			}
			if _, err := config.Load(config.Getenv(env)); err != nil {
				t.Errorf("the worker's environment does not load: %v", err)
			}
		})
	}
}

func TestRedisServices(t *testing.T) {
	for _, cf := range composeFiles {
		c := load(t, cf.path)
		for _, name := range cf.redis {
			t.Run(cf.path+"/"+name, func(t *testing.T) {
				r, ok := c.Services[name]
				if !ok {
					t.Fatal("missing")
				}
				if !strings.HasPrefix(r.Image, "redis:7") {
					t.Errorf("image = %q, want redis:7-...", r.Image)
				}
				cmd := strings.Join(r.Command, " ")
				for _, want := range []string{"--appendonly yes", "--appendfsync always"} {
					if !strings.Contains(cmd, want) {
						t.Errorf("command %q lacks %q", cmd, want)
					}
				}
				var data bool
				for _, v := range r.Volumes {
					vol, target, _ := strings.Cut(v, ":")
					if target == "/data" {
						data = true
						if _, ok := c.Volumes[vol]; !ok {
							t.Errorf("volume %q is not declared", vol)
						}
					}
				}
				if !data {
					t.Error("no volume on /data: the AOF would die with the container")
				}
				if len(r.Healthcheck.Test) == 0 {
					t.Error("no healthcheck")
				}
				if len(r.Ports) > 0 {
					t.Errorf("Redis is published on the host: %v", r.Ports)
				}
			})
		}
	}
}

func TestEnvExampleMatchesConfig(t *testing.T) {
	cfg := configVars(t)
	ex := envExample(t)
	for k, def := range cfg {
		v, ok := ex[k]
		if !ok {
			t.Errorf(".env.example lacks %s", k)
			continue
		}
		if v != def {
			t.Errorf(".env.example has %s=%q; config's default is %q", k, v, def)
		}
	}
	for k := range ex {
		if _, ok := cfg[k]; !ok {
			t.Errorf(".env.example has %s, which config does not read", k)
		}
	}
	// The example as a whole is a valid configuration.
	var env []string
	for k, v := range ex {
		env = append(env, k+"="+v)
	}
	if _, err := config.Load(config.Getenv(env)); err != nil {
		t.Errorf(".env.example does not load: %v", err)
	}
}

func TestComposeSetsOnlyRealVariables(t *testing.T) {
	cfg := configVars(t)
	ex := envExample(t)
	for _, cf := range composeFiles {
		c := load(t, cf.path)
		for name, s := range c.Services {
			for k, v := range s.Environment {
				if _, ok := cfg[k]; !ok {
					t.Errorf("%s: %s sets %s, which config does not read", cf.path, name, k)
				}
				if _, ok := ex[k]; !ok {
					t.Errorf("%s: %s sets %s, which .env.example lacks", cf.path, name, k)
				}
				// ${VAR:-default}: the variable is the setting itself and
				// the default is config's.
				for _, m := range interpRE.FindAllStringSubmatch(v, -1) {
					if m[1] != k {
						t.Errorf("%s: %s=%s interpolates another variable, %s", cf.path, k, v, m[1])
					}
					if m[2] != cfg[k] {
						t.Errorf("%s: %s defaults to %q, config to %q", cf.path, k, m[2], cfg[k])
					}
				}
			}
		}
	}
}
