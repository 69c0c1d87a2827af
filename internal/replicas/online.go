package replicas

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// Online counts the replicas an INFO replication reply lists with
// state=online; those in a full resync (wait_bgsave, send_bulk) cannot
// acknowledge and are left out. A replica that is online but has not
// acknowledged yet (offset 0 while it loads what a diskless sync sent) is
// counted: it may be promoted with what it has, so a write must wait for
// it, and a WAIT that times out then fails safe. It fails when the node
// is not a master (role:slave: a failover moved the master).
func Online(info string) (int, error) {
	n, role := 0, ""
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if r, ok := strings.CutPrefix(line, "role:"); ok {
			role = r
			continue
		}
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "slave") || name == "slave" || strings.Trim(name[len("slave"):], "0123456789") != "" {
			continue
		}
		for f := range strings.SplitSeq(fields, ",") {
			if f == "state=online" {
				n++
			}
		}
	}
	switch {
	case role == "":
		return 0, errors.New("INFO replication says no role")
	case role != "master":
		return 0, fmt.Errorf("not a master (role:%s)", role)
	}
	return n, nil
}
