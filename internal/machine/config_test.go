package machine

import (
	"strings"
	"testing"
)

func TestNewRejectsBadConfig(t *testing.T) {
	m, err := New(Config{})
	if err == nil || !strings.Contains(err.Error(), "machine: Lane is required") {
		t.Fatalf("New(Config{}) = %v, %v; want the error naming Lane", m, err)
	}
}

func TestNewDefaults(t *testing.T) {
	m, err := New(Config{Lane: &fakeLane{}})
	if err != nil {
		t.Fatal(err)
	}
	if m.log == nil {
		t.Error("Logger default not filled")
	}
	if m.State() != Idle {
		t.Errorf("new machine in %v, want idle", m.State())
	}
}
