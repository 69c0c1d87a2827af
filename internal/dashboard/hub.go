package dashboard

import "sync"

// hub fans Run's pushes out to the /events streams. Each stream holds at
// most one pending push and a newer one replaces it: a slow client gets
// the latest picture late, never a backlog, and never slows the others.
type hub struct {
	mu        sync.Mutex
	subs      map[*subscriber]struct{}
	byClient  map[string]int // anonymous streams per client address
	anon      int            // anonymous streams
	max       int            // anonymous streams at most
	perClient int            // anonymous streams of one client address
	adminRoom int            // streams past max for the admin token's bearers
	closed    bool
	done      chan struct{} // closed when Run returns: streams end
}

type subscriber struct {
	ch     chan []byte // capacity 1: the latest push not yet written
	client string      // its client's address
	admin  bool        // its client bears the admin token
}

func newHub(maxSubs, perClient, adminRoom int) *hub {
	return &hub{subs: map[*subscriber]struct{}{}, byClient: map[string]int{}, max: maxSubs, perClient: perClient,
		adminRoom: adminRoom, done: make(chan struct{})}
}

// subscribe adds a stream of client (its address), or of the admin
// token's bearer: those may take adminRoom streams past max, so a crowd
// of anonymous streams never locks an operator out. False when there is
// no room or the hub is closed.
func (h *hub) subscribe(client string, admin bool) (*subscriber, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed,
		admin && len(h.subs) >= h.max+h.adminRoom,
		!admin && (h.anon >= h.max || h.byClient[client] >= h.perClient):
		return nil, false
	}
	s := &subscriber{ch: make(chan []byte, 1), client: client, admin: admin}
	if !admin {
		h.anon++
		h.byClient[client]++
	}
	h.subs[s] = struct{}{}
	return s, true
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok && !s.admin {
		h.anon--
		if h.byClient[s.client]--; h.byClient[s.client] == 0 {
			delete(h.byClient, s.client)
		}
	}
	delete(h.subs, s)
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// broadcast hands every stream its frame (admin to the admin token's
// bearers, public to the others), replacing a push it has not written
// yet. It never blocks: mu makes it the only sender, so after the
// drain there is room.
func (h *hub) broadcast(public, admin []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		msg := public
		if s.admin {
			msg = admin
		}
		select {
		case <-s.ch:
		default:
		}
		s.ch <- msg
	}
}

// close ends every stream and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}
