package replicas

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// Online counts the replicas an INFO replication reply lists with
// state=online that have acknowledged the replication stream: an
// acknowledged offset above 0, or a master that has written nothing yet
// (master_repl_offset 0). After a diskless sync the master marks a
// replica online before the replica has loaded the data and sent its
// first acknowledgement; until then its offset is 0 and a WAIT for it
// times out. It fails when the node is not a master (role:slave: a
// failover moved the master).
func Online(info string) (int, error) {
	online, acked, role, wrote := 0, 0, "", false
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if r, ok := strings.CutPrefix(line, "role:"); ok {
			role = r
			continue
		}
		if off, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
			wrote = off != "0"
			continue
		}
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "slave") || name == "slave" || strings.Trim(name[len("slave"):], "0123456789") != "" {
			continue
		}
		isOnline, hasAck := false, false
		for f := range strings.SplitSeq(fields, ",") {
			switch {
			case f == "state=online":
				isOnline = true
			case strings.HasPrefix(f, "offset="):
				hasAck = f != "offset=0"
			}
		}
		if isOnline {
			online++
			if hasAck {
				acked++
			}
		}
	}
	switch {
	case role == "":
		return 0, errors.New("INFO replication says no role")
	case role != "master":
		return 0, fmt.Errorf("not a master (role:%s)", role)
	case !wrote:
		return online, nil
	}
	return acked, nil
}
