package backend

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/config"
)

// Probe asks every node, in parallel and within timeout, to answer a
// PING, which goes through go-redis's whole handshake (TLS, AUTH or HELLO,
// SELECT). An answer no retry can change, a Permanent error, comes back as
// a *config.Error naming REDIS_URLS and the node by its number and
// host:port, never its password. A node that did not answer in
// REDIS_NODE_TIMEOUT (a handshake slowed by a busy host, say) is asked
// again until timeout ends, so a slow answer still tells a refusal from a
// node that is merely down. Anything else (connection refused, no answer
// by the end) is left to the callers' retries: Redis may not be up yet.
func (b *Backend) Probe(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	refusals := make([]error, len(b.Clients))
	for try := 1; ; try++ {
		errs := b.ping(ctx, timeout)
		again := false
		for i, err := range errs {
			if refusals[i] == nil {
				refusals[i] = b.refusal(i, err)
			}
			again = again || err != nil && refusals[i] == nil && timedOut(err)
		}
		if !again || !backoff.Sleep(ctx, probeRetry.Delay(try)) {
			return errors.Join(refusals...)
		}
	}
}

// probeRetry spaces Probe's questions to nodes that did not answer in time.
var probeRetry = backoff.Policy{Base: 50 * time.Millisecond, Max: 400 * time.Millisecond}

// timedOut: err is a call that ran out of time, not a refused connection.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// ping asks every node for a PING, in parallel, each within timeout, and
// returns each node's error by index (nil for an answer). A rediss:// node
// that fails with something else than a refusal and answers plain RESP
// gets errPlainServer.
func (b *Backend) ping(ctx context.Context, timeout time.Duration) []error {
	errs := make([]error, len(b.Clients))
	var wg sync.WaitGroup
	for i, c := range b.Clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			err := c.Ping(ctx).Err()
			node := b.probes[i]
			if err != nil && !Permanent(err) && node.tls && speaksPlain(ctx, node.addr) {
				err = errPlainServer
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errs
}

// refusal is node i's Permanent error as a *config.Error, else nil.
func (b *Backend) refusal(i int, err error) error {
	if err == nil || !Permanent(err) {
		return nil
	}
	return &config.Error{Var: "REDIS_URLS", Msg: fmt.Sprintf("URL %d (%s): %s", i+1, b.probes[i].addr, explain(err))}
}

// errPlainServer is a rediss:// URL whose server answered plain RESP.
var errPlainServer = errors.New("the server does not speak TLS (it answers plain Redis): use redis:// or its TLS port")

// Permanent reports whether err is a refusal that retrying cannot change:
// wrong or missing credentials, a user without a needed permission, a
// database index out of range, or a TLS handshake that cannot succeed
// (not TLS at all, or a certificate that is not trusted or does not fit).
func Permanent(err error) bool {
	var (
		record   tls.RecordHeaderError
		alert    tls.AlertError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, errPlainServer), redis.IsAuthError(err), redis.IsPermissionError(err),
		redis.HasErrorPrefix(err, "DB index is out of range"), redis.HasErrorPrefix(err, "invalid password"),
		redis.HasErrorPrefix(err, "Client sent AUTH"), redis.HasErrorPrefix(err, "AUTH "):
		return true
	case errors.As(err, &record), errors.As(err, &alert), errors.As(err, &verify),
		errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return true
	}
	return false
}

// explain is err with a hint at the part of the URL to fix.
func explain(err error) string {
	hint := ""
	switch {
	case redis.IsAuthError(err), redis.HasErrorPrefix(err, "invalid password"),
		redis.HasErrorPrefix(err, "Client sent AUTH"), redis.HasErrorPrefix(err, "AUTH "):
		hint = " (check the user and password in the URL)"
	case redis.IsPermissionError(err):
		hint = " (the user lacks a permission; see the ACL line in docs/operations.md)"
	case redis.HasErrorPrefix(err, "DB index is out of range"):
		hint = " (check the database number at the end of the URL)"
	case errors.Is(err, errPlainServer):
	default:
		hint = " (TLS; a private CA goes in REDIS_CA_FILE)"
	}
	return err.Error() + hint
}

// speaksPlain reports whether addr answers a plain-text PING: a TLS client
// hello sent to a plain Redis is often just held, unanswered, until the
// handshake times out, which alone looks like a network problem.
func speaksPlain(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	first, err := bufio.NewReader(conn).ReadByte()
	return err == nil && (first == '+' || first == '-')
}
