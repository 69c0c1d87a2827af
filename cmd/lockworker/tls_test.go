package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestTLSWithPrivateCA: a rediss:// URL to a TLS-only port of a real
// redis-server whose certificate a private CA signed. With REDIS_CA_FILE
// the replica leads; without it the certificate is refused, which no retry
// can change: it exits 2 and says where the CA goes.
func TestTLSWithPrivateCA(t *testing.T) {
	processTest(t)
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTestPKI(t, dir)
	tlsPort := redistest.FreePort(t)
	redistest.Start(t, redistest.Options{Args: []string{
		"--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--tls-ca-cert-file", caFile, "--tls-auth-clients", "no",
	}})
	url := "rediss://127.0.0.1:" + strconv.Itoa(tlsPort)

	untrusted := startWorker(t, "tls-untrusted", fastEnv(url)...)
	err, ok := untrusted.exited(10 * time.Second)
	var ee *exec.ExitError
	if !ok || !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("without the CA: exited=%v err=%v; want exit code 2\n%s", ok, err, untrusted.out)
	}
	for _, want := range []string{"REDIS_URLS: URL 1", "certificate signed by unknown authority", "REDIS_CA_FILE"} {
		if !strings.Contains(untrusted.out.String(), want) {
			t.Fatalf("the refusal does not say %q:\n%s", want, untrusted.out)
		}
	}

	w := startWorker(t, "tls", append(fastEnv(url), "REDIS_CA_FILE="+caFile)...)
	poll.Until(t, 5*time.Second, "leads over TLS", func() bool { return len(leaders(w)) == 1 })
}

// writeTestPKI writes a CA and a server certificate for 127.0.0.1 signed by
// it, and returns the CA, certificate and key files.
func writeTestPKI(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lockworker test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caTmpl, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}
