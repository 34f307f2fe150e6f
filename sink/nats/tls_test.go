package nats_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// testCA makes a certificate authority and a server certificate for
// 127.0.0.1, and writes the CA's PEM to a file.
func testCA(t *testing.T) (serverCert tls.Certificate, caFile string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caFile
}

// TLS: with the CA the sink connects and delivers; without it the server's
// certificate is refused (verification is never turned off).
func TestNATSTLS(t *testing.T) {
	cert, caFile := testCA(t)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true, TLS: true,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	port := srv.Addr().(*net.TCPAddr).Port

	s := sinktest.Open(t, fmt.Sprintf("tls://127.0.0.1:%d/papers.tls?stream=TLS&tls_ca=%s", port, caFile), sink.Options{})
	if err := s.Write(context.Background(), sinktest.Records("tls", 3)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// The scheme is case-insensitive, and TLS is on however it is spelt.
	for _, scheme := range []string{"tls", "TLS", "Tls"} {
		_, err = sink.Open(context.Background(), fmt.Sprintf("%s://127.0.0.1:%d/papers.tls?stream=TLS", scheme, port), sink.Options{})
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("%s://: a server certificate from an unknown CA was accepted: %v", scheme, err)
		}
	}
	_, err = sink.Open(context.Background(), fmt.Sprintf("nats://127.0.0.1:%d/x?stream=T&tls_ca=%s", port, filepath.Join(t.TempDir(), "missing.pem")), sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "tls_ca") {
		t.Fatalf("a missing CA file: %v", err)
	}
}
