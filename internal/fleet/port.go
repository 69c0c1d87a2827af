package fleet

import (
	"errors"
	"fmt"
	"net"
)

// FreePort asks the kernel for a free loopback TCP port. It never returns
// 6379, the port a developer's own Redis may hold.
func FreePort() (int, error) {
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("fleet: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port != 6379 {
			return port, nil
		}
	}
	return 0, errors.New("fleet: no free port")
}
