package fencecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Reply is the body of the answer to POST /write.
type Reply struct {
	Accepted bool  `json:"accepted"`
	Highest  int64 `json:"highest"`
}

// maxBody bounds a write's JSON body.
const maxBody = 64 << 10

// Handler serves POST /write with a JSON Write body. It answers 200 with a
// Reply when the write was accepted and 409 with a Reply when it was
// rejected as stale; 400 for a body it cannot read.
func Handler(s *Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", func(w http.ResponseWriter, r *http.Request) {
		var in Write
		if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&in); err != nil {
			http.Error(w, "fencecheck: bad write: "+err.Error(), http.StatusBadRequest)
			return
		}
		rec := s.Write(in)
		w.Header().Set("Content-Type", "application/json")
		if !rec.Accepted {
			w.WriteHeader(http.StatusConflict)
		}
		_ = json.NewEncoder(w).Encode(Reply{Accepted: rec.Accepted, Highest: max(rec.Highest, rec.Token)})
	})
	return mux
}

// ErrStale is returned by Post for a write the store rejected.
var ErrStale = errors.New("fencecheck: write rejected: stale fencing token")

// Post sends w to the Handler at baseURL. It returns nil when the write was
// accepted and an error wrapping ErrStale when it was rejected.
func Post(ctx context.Context, c *http.Client, baseURL string, w Write) error {
	body, err := json.Marshal(w)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/write", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("fencecheck: post: %w", err)
	}
	defer resp.Body.Close()
	var rep Reply
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusConflict:
		_ = json.NewDecoder(resp.Body).Decode(&rep)
		return fmt.Errorf("%w (token %d, highest %d)", ErrStale, w.Token, rep.Highest)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("fencecheck: post: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
}
