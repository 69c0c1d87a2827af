package leader

import "testing"

// TestResultLabels holds the metric label of every result: dashboards and
// alerts select on them.
func TestResultLabels(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{AcquireError.String(), "error"}, {Acquired.String(), "acquired"}, {Held.String(), "held"},
		{RenewError.String(), "error"}, {Renewed.String(), "renewed"}, {Lost.String(), "lost"},
	} {
		if tt.got != tt.want {
			t.Errorf("label %q, want %q", tt.got, tt.want)
		}
	}
}
