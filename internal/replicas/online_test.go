package replicas

import "testing"

func TestOnline(t *testing.T) {
	for _, tc := range []struct {
		info string
		n    int
		err  bool
	}{
		{"# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n", 0, false},
		{"# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" +
			"slave0:ip=127.0.0.1,port=7001,state=online,offset=42,lag=0\r\n" +
			"slave1:ip=127.0.0.1,port=7002,state=wait_bgsave,offset=0,lag=0\r\nslave_read_repl_offset:1\r\n", 1, false},
		{"# Replication\r\nrole:master\r\nslave0:ip=a,port=1,state=send_bulk,offset=0,lag=0\r\nslave1:ip=b,port=2,state=online,offset=9,lag=1\r\nslave2:ip=c,port=3,state=online,offset=9,lag=0\r\n", 2, false},
		{"# Replication\r\nrole:master\r\nslave0:ip=a,port=1,state=online,offset=0,lag=1\r\nmaster_repl_offset:5000\r\n", 1, false},
		{"# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nslave_repl_offset:5\r\n", 0, true},
		{"", 0, true},
	} {
		n, err := Online(tc.info)
		if n != tc.n || (err != nil) != tc.err {
			t.Errorf("Online(%q) = %d, %v; want %d, error %v", tc.info, n, err, tc.n, tc.err)
		}
	}
}
