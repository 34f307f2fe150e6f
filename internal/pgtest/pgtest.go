// Package pgtest starts throwaway PostgreSQL servers for tests, from the
// machine's own binaries (initdb and pg_ctl in /usr/lib/postgresql/*/bin,
// or on PATH): a data directory in a fresh temporary directory, a free
// loopback port and a socket in that directory, TLS on with a certificate
// of the harness's own CA, fsync and synchronous_commit on. As root the
// server runs as the "postgres" user (runuser), as PostgreSQL refuses to
// run as root.
//
// Without the binaries a test skips, saying how to install them; with
// CI=true it fails instead (.ci/run installs them).
package pgtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is one running throwaway server. Its superuser is "postgres",
// trusted on the socket and on loopback; the role "pwuser" (password
// PasswordUserSecret) must give its password over TCP.
type Server struct {
	Dir    string // the temporary directory: data, socket, log, certificates
	Port   int
	CAFile string // the CA that signed the server's certificate (PEM)

	bin    string
	asRoot bool
	uid    int
	gid    int
	mu     sync.Mutex
	dbs    atomic.Int64
}

// PasswordUser and PasswordUserSecret are a role that must authenticate
// with a password over TCP (scram-sha-256).
const (
	PasswordUser       = "pwuser"
	PasswordUserSecret = "s3cret-Pa55w0rd"
)

// Binaries finds the directory of initdb and pg_ctl: the newest of
// /usr/lib/postgresql/*/bin, else the directory of initdb on PATH.
func Binaries() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		d := filepath.Dir(p)
		if isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL's initdb and pg_ctl were not found in /usr/lib/postgresql/*/bin nor on PATH")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExec(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

// need skips t (or fails it with CI=true) when the binaries are missing.
func need(t testing.TB) string {
	t.Helper()
	bin, err := Binaries()
	if err == nil {
		return bin
	}
	msg := err.Error() + ": install PostgreSQL (Debian: apt-get install -y postgresql) to run this test"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: .ci/run installs it)")
	}
	t.Skip(msg)
	return ""
}

// New starts a server of t's own, stopped and removed when t ends.
func New(t testing.TB) *Server {
	t.Helper()
	bin := need(t)
	s, err := start(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Destroy() })
	return s
}

var shared struct {
	sync.Mutex
	s   *Server
	err error
}

// Shared is one server for every test of a package that asks for it,
// started on first use; the package's TestMain stops it with StopShared.
func Shared(t testing.TB) *Server {
	t.Helper()
	bin := need(t)
	shared.Lock()
	defer shared.Unlock()
	if shared.s == nil && shared.err == nil {
		shared.s, shared.err = start(bin)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.s
}

// StopShared stops and removes the shared server, if one was started.
func StopShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.s != nil {
		shared.s.Destroy()
		shared.s = nil
	}
}

func start(bin string) (*Server, error) {
	s := &Server{bin: bin, asRoot: os.Geteuid() == 0, uid: -1, gid: -1}
	dir, err := os.MkdirTemp("", "litcrawl-pg-")
	if err != nil {
		return nil, err
	}
	s.Dir = dir
	fail := func(err error) (*Server, error) {
		s.Destroy()
		return nil, err
	}
	if s.asRoot {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fail(fmt.Errorf("running as root, the server must run as the user postgres, which does not exist (install Debian's postgresql package): %w", err))
		}
		s.uid, _ = strconv.Atoi(u.Uid)
		s.gid, _ = strconv.Atoi(u.Gid)
		if err := os.Chown(dir, s.uid, s.gid); err != nil {
			return fail(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	if err := s.writeCerts(); err != nil {
		return fail(err)
	}
	out, err := s.run("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err != nil {
		return fail(fmt.Errorf("initdb: %v: %s", err, out))
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	s.Port = port
	conf := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
max_connections = 60
shared_buffers = 32MB
fsync = on
synchronous_commit = on
ssl = on
ssl_cert_file = '%s'
ssl_key_file = '%s'
logging_collector = off
log_min_messages = warning
`, port, dir, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	if err := appendFile(filepath.Join(s.data(), "postgresql.conf"), conf); err != nil {
		return fail(err)
	}
	hba := "local all all trust\n" +
		"host all " + PasswordUser + " 127.0.0.1/32 scram-sha-256\n" +
		"host all all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(s.data(), "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return fail(err)
	}
	if err := s.own(filepath.Join(s.data(), "pg_hba.conf")); err != nil {
		return fail(err)
	}
	if err := s.Start(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Exec(ctx, "postgres", "CREATE ROLE "+PasswordUser+" LOGIN PASSWORD '"+PasswordUserSecret+"'"); err != nil {
		return fail(err)
	}
	return s, nil
}

func (s *Server) data() string { return filepath.Join(s.Dir, "data") }

// run runs one of the binaries, as the postgres user when root.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.asRoot {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd.CombinedOutput()
}

// Start starts the server (again, after Stop) and waits until it takes
// connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.Dir, "server.log"), "-w", "-t", "60", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
	}
	return nil
}

// Stop stops the server (fast shutdown: sessions are ended, committed
// work is kept) and waits until it is down.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.run("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "-t", "60", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Destroy stops the server if it runs and removes its directory.
func (s *Server) Destroy() {
	if s.Dir == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(s.data(), "postmaster.pid")); err == nil {
		s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	}
	os.RemoveAll(s.Dir)
}

// URL is a postgres:// URL of database db as the superuser over TCP
// (plaintext: loopback), with extra query parameters.
func (s *Server) URL(db string, query ...string) string {
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s", s.Port, url.PathEscape(db))
	if len(query) > 0 {
		u += "?" + strings.Join(query, "&")
	}
	return u
}

// Socket is the directory of the server's Unix socket.
func (s *Server) Socket() string { return s.Dir }

// Exec runs SQL as the superuser in database db.
func (s *Server) Exec(ctx context.Context, db, sql string, args ...any) error {
	c, err := s.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// Connect opens a connection as the superuser to database db.
func (s *Server) Connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, s.URL(db, "sslmode=disable"))
}

// NewDB creates a fresh, empty database for t and returns its name.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Exec(ctx, "postgres", "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return name
}

// writeCerts makes a CA and a server certificate for localhost and
// 127.0.0.1 that it signed.
func (s *Server) writeCerts() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "litcrawl test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	s.CAFile = filepath.Join(s.Dir, "ca.crt")
	files := []struct {
		name, typ string
		der       []byte
		mode      os.FileMode
	}{
		{"ca.crt", "CERTIFICATE", caDER, 0o644},
		{"server.crt", "CERTIFICATE", der, 0o644},
		{"server.key", "EC PRIVATE KEY", keyDER, 0o600},
	}
	for _, f := range files {
		p := filepath.Join(s.Dir, f.name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return err
		}
		if err := s.own(p); err != nil {
			return err
		}
	}
	return nil
}

// own gives p to the server's user when running as root.
func (s *Server) own(p string) error {
	if !s.asRoot {
		return nil
	}
	return os.Chown(p, s.uid, s.gid)
}

func appendFile(p, text string) error {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
