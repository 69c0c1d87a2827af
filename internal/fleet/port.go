package fleet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Ports are chosen in [portLow, portLow+portSpan): a Redis Cluster node
// listens on its port and on its port + clusterBus, so its bus lands in
// [20000, 30000), where no port is ever chosen. The range sits below the
// kernel's usual ephemeral range (32768 and up), which client connections
// take their local ports from.
const (
	portLow    = 10000
	portSpan   = 10000
	clusterBus = 10000
	// browserBlocked is the one port of the range on the Fetch standard's
	// list of bad ports, which browsers refuse to load pages from: the
	// dashboard's browser tests would fail on it.
	browserBlocked = 10080
)

// reserved keeps every port FreePort returned in this process, and the
// open lock file that reserves it across processes (nil when the port
// came from the kernel instead): the lock lasts as long as this process.
var reserved = struct {
	sync.Mutex
	ports map[int]*os.File
}{ports: map[int]*os.File{}}

// FreePort returns a loopback TCP port for a child to listen on, one that
// nothing should take between now and the child's bind. Three things
// could:
//
//   - a client connection's local port, which the kernel takes from its
//     ephemeral range (ip_local_port_range): ports are chosen outside it;
//   - another process choosing the same port (the test binaries of
//     several packages run at once): each port is reserved by an
//     exclusive lock (flock) on a file named after it in
//     $TMPDIR/lockworker-ports, held until this process exits;
//   - a Redis Cluster node's bus, on its port + 10000: chosen ports and
//     their buses do not overlap.
//
// Where that cannot be done (the ephemeral range covers the chosen range,
// the lock directory is not writable), it falls back to a port the kernel
// picks, which another program may take first. It never returns 6379, the
// port a developer's own Redis may hold, nor a port it returned before.
func FreePort() (int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	if dir, ok := portDir(); ok {
		for range 200 {
			port := portLow + rand.IntN(portSpan)
			if _, taken := reserved.ports[port]; taken || port == browserBlocked {
				continue
			}
			f, ok := reserve(dir, port)
			if !ok {
				continue
			}
			if !bindable(port) || !bindable(port+clusterBus) {
				_ = f.Close() // someone else's: leave it to them
				continue
			}
			reserved.ports[port] = f
			return port, nil
		}
	}
	return kernelPort()
}

// kernelPort is a port the kernel picks, not 6379 and not returned before.
func kernelPort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("fleet: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if _, taken := reserved.ports[port]; port != 6379 && !taken {
			reserved.ports[port] = nil
			return port, nil
		}
	}
	return 0, errors.New("fleet: no free port")
}

// portDir is the directory of the ports' lock files, made once; false
// when it cannot be made or the chosen range meets the ephemeral one.
var portDir = sync.OnceValues(func() (string, bool) {
	if !outsideEphemeral() {
		return "", false
	}
	return lockDir()
})

// lockDir is the directory of the ports' lock files, made if missing.
func lockDir() (string, bool) {
	dir := filepath.Join(os.TempDir(), "lockworker-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", false
	}
	_ = os.Chmod(dir, 0o1777) // every user's tests share it, as /tmp
	return dir, true
}

// reserve takes the lock of port, without waiting; the returned file
// holds it.
func reserve(dir string, port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return f, true
}

// bindable reports whether port can be listened on, on every address (as
// the daemon listens) and so on loopback.
func bindable(port int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// outsideEphemeral reports whether the chosen ports and their buses lie
// outside the kernel's ephemeral range (32768-60999 when it cannot be
// read).
func outsideEphemeral() bool {
	lo, hi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			l, err1 := strconv.Atoi(f[0])
			h, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil {
				lo, hi = l, h
			}
		}
	}
	top := portLow + portSpan - 1 + clusterBus
	return top < lo || portLow > hi
}
