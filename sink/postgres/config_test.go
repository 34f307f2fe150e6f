package postgres

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/sink/sinkurl"
)

// Bad URLs are refused before anything is opened, naming the parameter,
// its value and what is expected; a password parameter is refused with a
// word on where a password goes.
func TestURLErrors(t *testing.T) {
	t.Setenv("PGSSLMODE", "")
	t.Setenv("PGDATABASE", "")
	dir := t.TempDir()
	cases := []struct{ url, want string }{
		{"postgres://u@db.example.com/lit?password=hunter22", `parameter "password" is not taken: give the password in the URL's user information`},
		{"postgres://u@db.example.com/lit?sslpassword=x", `"sslpassword" is not taken`},
		// Several refused: the first by name, every time.
		{"postgres://u@db.example.com/lit?sslpassword=y&password=z&servicefile=x", `"password" is not taken`},
		{"postgres://u@db.example.com/lit?servicefile=/tmp/x", "PGSERVICEFILE"},
		{"postgres://u@db.example.com/lit?table=Papers", `table="Papers": expected a table name of lower-case letters`},
		{"postgres://u@db.example.com/lit?table=a.b.c", `table="a.b.c"`},
		{"postgres://u@db.example.com/lit?table=litcrawl_writers", "the sink's own tables"},
		{"postgres://u@db.example.com/lit?tabel=papers", `unknown parameter "tabel" (known: table, timeout, max_conns, host, port, dbname, user, sslmode, sslrootcert, sslcert, sslkey, sslsni, connect_timeout, application_name, target_session_attrs, service, channel_binding, require_auth); did you mean table?`},
		{"postgres://u@db.example.com/lit?sslmode=on", `sslmode="on": expected one of disable, allow, prefer, require, verify-ca, verify-full`},
		{"postgres://u@db.example.com/lit?timeout=0s", `timeout="0s": expected a positive duration`},
		{"postgres://u@db.example.com/lit?timeout=1h", "expected at most 10m0s"},
		{"postgres://u@db.example.com/lit?max_conns=0", `max_conns="0": expected a number of connections from 1 to 64`},
		{"postgres://u@db.example.com/lit?max_conns=65", "from 1 to 64"},
		{"postgres://u@db.example.com/lit?connect_timeout=0", "expected a number of seconds from 1 to 600"},
		{"postgres://u@db.example.com/lit?table=p&table=q", `"table" given 2 times`},
		{"postgres://u@db.example.com/", "expected a database after the host"},
		{"postgres://u@db.example.com/lit?sslrootcert=/dev/zero", "sslrootcert=\"/dev/zero\": expected a regular file"},
		{"postgres://u@db.example.com/lit?sslrootcert=" + dir, "expected a regular file"},
		{"postgres://u@db.example.com/lit?sslrootcert=" + filepath.Join(dir, "none.pem"), "expected a readable file"},
	}
	for _, c := range cases {
		_, err := parseURL(c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant …%s…", c.url, err, c.want)
		}
		// The role is named (it is no secret); a password parameter is not.
		if err != nil && !strings.Contains(err.Error(), `"postgres://u@db.example.com/`) || strings.Contains(err.Error(), "hunter22") {
			t.Errorf("%s: the URL in the error: %v", c.url, err)
		}
	}
	t.Setenv("PGSSLMODE", "sometimes")
	if _, err := parseURL("postgres://u@db.example.com/lit"); err == nil || !strings.Contains(err.Error(), `PGSSLMODE="sometimes"`) {
		t.Errorf("a bad PGSSLMODE: %v", err)
	}
}

// The TLS policy: off loopback, TLS is the default and the certificate is
// always verified, whatever sslmode says short of disable; no plaintext
// follows a failed TLS connection there. On loopback and sockets
// plaintext is the default; prefer tries verified TLS first.
func TestTLSPolicy(t *testing.T) {
	t.Setenv("PGSSLMODE", "")
	cases := []struct {
		url, env   string
		tls        bool // the first try uses TLS
		fallback   bool // a plaintext try follows
		serverName string
	}{
		{"postgres://u@db.example.com/lit", "", true, false, "db.example.com"},
		{"postgres://u@db.example.com/lit?sslmode=prefer", "", true, false, "db.example.com"},
		{"postgres://u@db.example.com/lit?sslmode=allow", "", true, false, "db.example.com"},
		{"postgres://u@db.example.com/lit?sslmode=require", "", true, false, "db.example.com"},
		{"postgres://u@db.example.com/lit", "require", true, false, "db.example.com"},
		{"postgres://u@db.example.com/lit?sslmode=disable", "", false, false, ""},
		{"postgres://u@db.example.com/lit", "disable", false, false, ""},
		{"postgres://u@10.0.0.5:5433/lit", "", true, false, "10.0.0.5"},
		{"postgres://u@127.0.0.1/lit", "", false, false, ""},
		{"postgres://u@localhost/lit", "", false, false, ""},
		{"postgres://u@[::1]:5432/lit", "", false, false, ""},
		{"postgres://u@127.0.0.1/lit?sslmode=prefer", "", true, true, "127.0.0.1"},
		{"postgres://u@127.0.0.1/lit?sslmode=verify-full", "", true, false, "127.0.0.1"},
		{"postgres://u@/lit?host=/run/postgresql", "", false, false, ""},
		{"postgres://u@localhost,db.example.com/lit", "", true, false, "localhost"},
	}
	for _, c := range cases {
		t.Setenv("PGSSLMODE", c.env)
		cfg, err := parseURL(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		cc := cfg.pool.ConnConfig.Config
		if got := cc.TLSConfig != nil; got != c.tls {
			t.Errorf("%s (PGSSLMODE=%s): TLS %v, want %v", c.url, c.env, got, c.tls)
			continue
		}
		if c.tls && (cc.TLSConfig.InsecureSkipVerify || cc.TLSConfig.ServerName != c.serverName) {
			t.Errorf("%s: TLS without verification of %q (skip %v, name %q)", c.url, c.serverName, cc.TLSConfig.InsecureSkipVerify, cc.TLSConfig.ServerName)
		}
		plain := false
		for _, f := range cc.Fallbacks {
			plain = plain || f.TLSConfig == nil
			if f.TLSConfig == nil && !isLocal(f.Host) {
				t.Errorf("%s: plaintext to %s off loopback", c.url, f.Host)
			}
		}
		if c.tls && plain != c.fallback {
			t.Errorf("%s: plaintext fallback %v, want %v", c.url, plain, c.fallback)
		}
		if cc.RuntimeParams["synchronous_commit"] != "on" {
			t.Errorf("%s: synchronous_commit is not forced on", c.url)
		}
	}
}

// A password in the URL is used but never shown: not in the description,
// nor in a parse error that would quote the connection string.
func TestPasswordNeverShown(t *testing.T) {
	const secret = "Sup3r-s3cret"
	cfg, err := parseURL("postgres://crawler:" + secret + "@db.example.com:5433/lit?table=lit.papers")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.pool.ConnConfig.Password != secret {
		t.Fatal("the URL's password is not used")
	}
	if strings.Contains(cfg.description, secret) || cfg.description != "postgres://crawler@db.example.com:5433/lit?table=lit.papers" {
		t.Errorf("description %q", cfg.description)
	}
	_, err = parseURL("postgres://crawler:" + secret + "@db.example.com:99999/lit")
	if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), url.QueryEscape(secret)) {
		t.Errorf("bad port: %v", err)
	}
}

// FuzzParseURL: any URL is refused or taken without a panic, and an error
// never shows the URL's password.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"postgres://u:pw12345@h:5432/db?table=papers", "postgresql://u@h1,h2:5433/db?sslmode=prefer",
		"postgres:///db?host=/run/postgresql", "postgres://u:p%40ss:w0rd@h/db", "postgres://u@h/db?table=s.t&timeout=5s",
		"postgres://@/", "postgres://u:sec:ret@h/db", "postgres://u@h:port/db",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !strings.HasPrefix(raw, "postgres://") && !strings.HasPrefix(raw, "postgresql://") {
			raw = "postgres://" + raw
		}
		_, err := parseURL(raw)
		if err == nil {
			return
		}
		u, perr := sinkurl.Parse(raw)
		if perr != nil || !u.HasPass || len(u.Pass) < 4 || !strings.Contains(err.Error(), u.Pass) {
			return
		}
		// The same URL with another password: if its error shows the
		// first password too, those characters come from elsewhere (the
		// host, the path), not from the password.
		scheme, rest, _ := strings.Cut(raw, "://")
		end := strings.IndexAny(rest, "/?")
		if end < 0 {
			end = len(rest)
		}
		at := strings.LastIndex(rest[:end], "@")
		user, _, _ := strings.Cut(rest[:at], ":")
		other := scheme + "://" + user + ":" + strings.Repeat("Q", 12) + rest[at:]
		if _, err2 := parseURL(other); err2 == nil || !strings.Contains(err2.Error(), u.Pass) {
			t.Fatalf("the error shows the password %q: %v", u.Pass, err)
		}
	})
}

// A mistyped URL that would make a message quote its password is refused
// without showing it.
func TestMistypedPasswordNotShown(t *testing.T) {
	for _, raw := range []string{
		"postgres://crawler:Xyz?zy7Plugh@127.0.0.1:5432/lit?table=papers",
		"postgres://crawler:Xyz#zy7Plugh@127.0.0.1:5432/lit",
		"postgres://crawler:Xy/zzy7Plugh@127.0.0.1:5432/lit",
		"postgres://crawler:Xyzzy7Plugh%40127.0.0.1:5432/lit",
		"postgres:/crawler:Xyzzy7Plugh@127.0.0.1/lit",
		"postgres://crawler%3AXyzzy7Plugh@127.0.0.1/lit",
	} {
		_, err := parseURL(raw)
		if err == nil || strings.Contains(err.Error(), "zy7Plugh") || strings.Contains(err.Error(), "Xyzzy") {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// Files named outside the URL (the libpq environment, a service, the
// home directory's defaults) are held to the same bound as the URL's: a
// device or a FIFO is refused before the driver reads it; a service's
// sslmode is taken as asked for.
func TestFilesOutsideTheURL(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PGSSLMODE", "")
	t.Setenv("PGSERVICE", "")
	t.Setenv("PGSERVICEFILE", "")
	t.Setenv("PGDATABASE", "")
	t.Setenv("PGSSLROOTCERT", "/dev/zero")
	if _, err := parseURL("postgres://u@127.0.0.1/lit"); err == nil || !strings.Contains(err.Error(), "PGSSLROOTCERT (/dev/zero): expected a regular file") {
		t.Errorf("PGSSLROOTCERT=/dev/zero: %v", err)
	}
	t.Setenv("PGSSLROOTCERT", "/proc/self/pagemap") // "regular", size 0, endless
	if _, err := parseURL("postgres://u@127.0.0.1/lit"); err == nil || !strings.Contains(err.Error(), "PGSSLROOTCERT (/proc/self/pagemap)") {
		t.Errorf("PGSSLROOTCERT=/proc/self/pagemap: %v", err)
	}
	t.Setenv("PGSSLROOTCERT", "")
	fifo := filepath.Join(home, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", fifo)
	if _, err := parseURL("postgres://u@127.0.0.1/lit"); err == nil || !strings.Contains(err.Error(), "PGPASSFILE") {
		t.Errorf("PGPASSFILE a FIFO: %v", err)
	}
	t.Setenv("PGPASSFILE", "")
	services := filepath.Join(home, "services.conf")
	os.WriteFile(services, []byte("[lit]\nhost=127.0.0.1\ndbname=lit\nsslmode=verify-full\n[bad]\nhost=127.0.0.1\ndbname=lit\nsslrootcert=/dev/zero\n"), 0o600)
	t.Setenv("PGSERVICEFILE", services)
	cfg, err := parseURL("postgres://u@/?service=lit")
	if err != nil || cfg.pool.ConnConfig.TLSConfig == nil || cfg.pool.ConnConfig.Database != "lit" {
		t.Errorf("a service's sslmode=verify-full on loopback: %v (TLS: %v)", err, err == nil && cfg.pool.ConnConfig.TLSConfig != nil)
	}
	// As libpq: the service's sslmode over PGSSLMODE.
	t.Setenv("PGSSLMODE", "disable")
	if cfg, err := parseURL("postgres://u@/?service=lit"); err != nil || cfg.pool.ConnConfig.TLSConfig == nil {
		t.Errorf("a service's verify-full under PGSSLMODE=disable: %v", err)
	}
	t.Setenv("PGSSLMODE", "")
	t.Setenv("PGSERVICE", "lit")
	if _, err := parseURL("postgres://u@/"); err != nil {
		t.Errorf("the database from PGSERVICE: %v", err)
	}
	if _, err := parseURL("postgres://u@/?service=bad"); err == nil || !strings.Contains(err.Error(), "service bad's sslrootcert (/dev/zero)") {
		t.Errorf("a service naming /dev/zero: %v", err)
	}
	for _, c := range []struct{ url, want string }{
		{"postgres://u@127.0.0.1/lit?application_name=" + strings.Repeat("a", 64), "application_name"},
		{"postgres://u@127.0.0.1/lit?sslsni=bogus", "sslsni=\"bogus\": expected 0 or 1"},
		{"postgres://u@127.0.0.1/lit?table=" + strings.Repeat("t", 41), "at most 40"},
	} {
		if _, err := parseURL(c.url); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.url, err)
		}
	}
}

// The sink names where it writes as the driver will connect: hosts, user
// and database given outside the URL show.
func TestDescriptionFollowsTheSettings(t *testing.T) {
	t.Setenv("PGSSLMODE", "")
	cfg, err := parseURL("postgres://crawler@127.0.0.1/lit?host=db.example.com&user=other")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.description != "postgres://other@db.example.com:5432/lit?table=papers" {
		t.Errorf("description %q", cfg.description)
	}
}

// One rule for a URL in a line: the sink's errors (its description) and
// the log lines' sink= (redact.URL) show the same user — a role, not a
// secret — and neither the password.
func TestErrorsAndLogLinesShowTheURLAlike(t *testing.T) {
	for _, raw := range []string{
		"postgres://crawler@db.example.com:5433/lit?table=papers",
		"postgres://crawler:Sup3r-s3cret@db.example.com:5433/lit?table=papers",
	} {
		cfg, err := parseURL(raw)
		if err != nil {
			t.Fatal(err)
		}
		shown := redact.URL(raw)
		if !strings.Contains(cfg.description, "://crawler@") || !strings.Contains(shown, "://crawler") ||
			strings.Contains(cfg.description+shown, "Sup3r") {
			t.Errorf("%s: error shows %q, log line %q", redact.URL(raw), cfg.description, shown)
		}
	}
}
