package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// root is the repository's root, from this package's directory.
const root = "../.."

var composeFiles = []string{"docker-compose.yml", "deploy/docker-compose.redlock.yml"}

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

func loadCompose(t *testing.T, path string) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// The env file reaches the workers only through the compose files'
// ${VAR:-default}: each setting must be one of them, in every file.
func TestSettingsReachTheWorkers(t *testing.T) {
	for _, path := range composeFiles {
		env := loadCompose(t, path).Services["worker"].Environment
		for _, kv := range defaultSettings.vars() {
			if v := env[kv[0]]; !strings.HasPrefix(v, "${"+kv[0]+":-") {
				t.Errorf("%s: worker's %s is %q, not ${%s:-...}: the e2e's setting would not reach it", path, kv[0], v, kv[0])
			}
		}
	}
}

// The e2e makes the images the files name, and no other.
func TestImagesAreTheFilesOwn(t *testing.T) {
	for _, path := range composeFiles {
		for name, s := range loadCompose(t, path).Services {
			want := redisImage
			if s.Build != nil {
				want = workerImage
			}
			if s.Image != want {
				t.Errorf("%s: service %s runs %q; the e2e prepares %q", path, name, s.Image, want)
			}
		}
	}
	images, err := officialImages(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"golang:1.26", "gcr.io/distroless/static-debian12:nonroot", redisImage}
	if !slices.Equal(images, want) {
		t.Errorf("officialImages = %v, want %v", images, want)
	}
}

func TestSettingsValidate(t *testing.T) {
	if err := defaultSettings.validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	s := defaultSettings
	s.renew = s.ttl / 2
	if err := s.validate(); err == nil {
		t.Error("RENEW_INTERVAL = LOCK_TTL/2: want an error")
	}
	s = defaultSettings
	s.work = 0
	if err := s.validate(); err == nil {
		t.Error("WORK_DURATION 0: want an error")
	}
	if !strings.Contains(defaultSettings.envFile(), "LOCK_TTL=2s\n") {
		t.Errorf("env file %q lacks LOCK_TTL=2s", defaultSettings.envFile())
	}
}

// By default the e2e runs docker-compose.yml a second time with eight
// partitions, given to the workers through the env file; -partitions 0
// skips it, -files= runs it alone.
func TestPartitionedRun(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.partitions != 8 || o.partsFile != "docker-compose.yml" || len(o.files) != 2 {
		t.Errorf("defaults: partitions %d of %q after %v", o.partitions, o.partsFile, o.files)
	}
	s := o.settings
	if !strings.Contains(s.envFile(), "PARTITIONS=1\n") {
		t.Errorf("env file of the files' runs %q lacks PARTITIONS=1", s.envFile())
	}
	s.partitions = 8
	if !strings.Contains(s.envFile(), "PARTITIONS=8\n") {
		t.Errorf("env file of the partitioned run %q lacks PARTITIONS=8", s.envFile())
	}
	if o, err = parseFlags([]string{"-files=", "-partitions", "0"}, io.Discard); err != nil || len(o.files) != 0 || o.partitions != 0 {
		t.Errorf("-files= -partitions 0: %v, files %v, partitions %d", err, o.files, o.partitions)
	}
}
