package fleet

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// handedOut remembers every port FreePort returned in this process: the
// kernel may offer a port again as soon as the probe closed it, and two
// children given the same port would race to bind it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePort asks the kernel for a free loopback TCP port that this process
// has not handed out before. It never returns 6379, the port a
// developer's own Redis may hold.
func FreePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("fleet: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		handedOut.Lock()
		fresh := port != 6379 && !handedOut.ports[port]
		if fresh {
			handedOut.ports[port] = true
		}
		handedOut.Unlock()
		if fresh {
			return port, nil
		}
	}
	return 0, errors.New("fleet: no free port")
}
