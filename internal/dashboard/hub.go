package dashboard

import "sync"

// hub fans Run's pushes out to the /events streams. Each stream holds at
// most one pending push and a newer one replaces it: a slow client gets
// the latest picture late, never a backlog, and never slows the others.
type hub struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	max    int
	closed bool
	done   chan struct{} // closed when Run returns: streams end
}

type subscriber struct {
	ch chan []byte // capacity 1: the latest push not yet written
}

func newHub(maxSubs int) *hub {
	return &hub{subs: map[*subscriber]struct{}{}, max: maxSubs, done: make(chan struct{})}
}

// subscribe adds a stream; false when the hub is full or closed.
func (h *hub) subscribe() (*subscriber, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(h.subs) >= h.max {
		return nil, false
	}
	s := &subscriber{ch: make(chan []byte, 1)}
	h.subs[s] = struct{}{}
	return s, true
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// broadcast hands msg to every stream, replacing a push it has not
// written yet. It never blocks: mu makes it the only sender, so after the
// drain there is room.
func (h *hub) broadcast(msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
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
