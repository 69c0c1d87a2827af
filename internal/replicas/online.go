package replicas

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// Online counts the replicas an INFO replication reply lists with
// state=online and an acknowledged offset above 0. (After a diskless
// sync the master marks a replica online before the replica has loaded
// the data and sent its first acknowledgement; until then its offset is
// 0 and a WAIT for it times out.) It fails when the node is not a master (role:slave: a
// failover moved the master).
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
		if !ok || !strings.HasPrefix(name, "slave") || strings.Trim(name[len("slave"):], "0123456789") != "" || name == "slave" {
			continue
		}
		online, acked := false, false
		for f := range strings.SplitSeq(fields, ",") {
			switch {
			case f == "state=online":
				online = true
			case strings.HasPrefix(f, "offset="):
				acked = f != "offset=0"
			}
		}
		if online && acked {
			n++
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
