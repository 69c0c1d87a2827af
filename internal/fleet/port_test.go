package fleet

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortIsOutsideTheEphemeralRangeAndNeverRepeats(t *testing.T) {
	if _, ok := portDir(); !ok {
		t.Skip("this machine's ephemeral port range covers FreePort's range, or no lock directory can be made")
	}
	seen := map[int]bool{}
	for range 200 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < portLow || port >= portLow+portSpan {
			t.Fatalf("port %d outside [%d, %d)", port, portLow, portLow+portSpan)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
	// A child can listen on the port, on every address, and on its bus.
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{port, port + clusterBus} {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("listen on %d: %v", p, err)
		}
		_ = l.Close()
	}
}

// The lock is per open file, as another process's would be: while one
// holds a port, a second reservation of it fails; once the first is
// closed (its process exited), it succeeds.
func TestReservationExcludesOtherHolders(t *testing.T) {
	dir := t.TempDir()
	first, ok := reserve(dir, 12345)
	if !ok {
		t.Fatal("the first reservation failed")
	}
	if f, ok := reserve(dir, 12345); ok {
		_ = f.Close()
		t.Fatal("a port already reserved was reserved again")
	}
	_ = first.Close()
	again, ok := reserve(dir, 12345)
	if !ok {
		t.Fatal("a port whose holder let go could not be reserved")
	}
	_ = again.Close()
}
