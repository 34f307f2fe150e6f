package postgres_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/pgtest"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// openErr opens url and returns the error (closing a sink that opened).
func openErr(t *testing.T, url string, opts sink.Options) error {
	t.Helper()
	s, err := sink.Open(bg, url, opts)
	if err == nil {
		s.Close()
	}
	return err
}

// A table the sink did not make, or one whose shape changed, is refused
// at open, naming the table and what is wrong; no retry mends that.
func TestWrongTableRefused(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	exec(t, srv, db, "CREATE TABLE mine (id integer)")
	err := openErr(t, srv.URL(db, "table=mine"), sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "table public.mine exists but was not made by this sink") || errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("a foreign table: %v", err)
	}

	url := srv.URL(db, "table=papers")
	openSink(t, url, "w").Close()
	exec(t, srv, db, "ALTER TABLE papers ALTER COLUMN authors TYPE text USING array_to_string(authors, ','); ALTER TABLE papers DROP COLUMN doi")
	err = openErr(t, url, sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "column doi is missing; column authors is text, expected text[]") || errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("a changed table: %v", err)
	}
	exec(t, srv, db, "CREATE SCHEMA lit")
	err = openErr(t, srv.URL(db, "table=nowhere.papers"), sink.Options{})
	if err == nil || !strings.Contains(err.Error(), `schema "nowhere" does not exist`) {
		t.Fatalf("a missing schema: %v", err)
	}
	s := openSink(t, srv.URL(db, "table=lit.papers"), "w")
	if err := s.Write(bg, sinktest.Records("s", 2)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := len(readRecords(t, srv, db, "lit.papers")); n != 2 {
		t.Fatalf("lit.papers has %d rows", n)
	}
}

// A user without the privileges the sink needs is told which one is
// missing, on what, and the GRANT that gives it; at open, and when a
// privilege is taken away while the sink writes.
func TestPrivileges(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	role := db + "_reader"
	exec(t, srv, "postgres", "CREATE ROLE "+role+" LOGIN")
	asRole := fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?table=papers", role, srv.Port, db)

	err := openErr(t, asRole, sink.Options{})
	if err == nil || !strings.Contains(err.Error(), `the user "`+role+`" lacks the CREATE privilege on schema public`) || errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("creating without CREATE on the schema: %v", err)
	}
	openSink(t, srv.URL(db, "table=papers"), "w").Close() // the owner makes the table
	exec(t, srv, db, "GRANT SELECT ON papers, litcrawl_writers TO "+role)
	err = openErr(t, asRole, sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "lacks the INSERT privilege on table public.papers") ||
		!strings.Contains(err.Error(), "GRANT SELECT, INSERT, UPDATE ON") {
		t.Fatalf("writing with SELECT only: %v", err)
	}
	exec(t, srv, db, "GRANT INSERT, UPDATE ON papers, litcrawl_writers TO "+role)
	s := openSink(t, asRole, "w")
	defer s.Close()
	if err := s.Write(bg, sinktest.Records("ok", 2)); err != nil {
		t.Fatal(err)
	}
	// CREATE on the schema is enough to make a second table beside the
	// first (the companion tables are not touched).
	exec(t, srv, db, "GRANT CREATE ON SCHEMA public TO "+role)
	err = openErr(t, strings.Replace(asRole, "table=papers", "table=second", 1), sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "lacks the INSERT privilege on table public.litcrawl_migrations") {
		t.Fatalf("making a second table: %v", err)
	}
	exec(t, srv, db, "GRANT INSERT ON litcrawl_migrations TO "+role)
	second := openSink(t, strings.Replace(asRole, "table=papers", "table=second", 1), "w")
	if err := second.Write(bg, sinktest.Records("two", 2)); err != nil {
		t.Fatal(err)
	}
	second.Close()
	exec(t, srv, db, "REVOKE INSERT ON papers FROM "+role)
	err = s.Write(bg, sinktest.Records("late", 2))
	if err == nil || !strings.Contains(err.Error(), "permission denied for table papers") || !strings.Contains(err.Error(), "public.papers") ||
		errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("writing after REVOKE: %v", err)
	}
}

// A password comes from the URL's user information, PGPASSWORD or the
// password file; it is never in a description, an error or a log line.
// A failed login is not retried.
func TestPasswords(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	exec(t, srv, db, "GRANT CREATE ON SCHEMA public TO "+pgtest.PasswordUser)
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	var logs bytes.Buffer
	opts := sink.Options{Writer: "w", Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	base := fmt.Sprintf("%s@127.0.0.1:%d/%s?table=papers", pgtest.PasswordUser, srv.Port, db)
	secret := pgtest.PasswordUserSecret
	var shown []string

	s, err := sink.Open(bg, "postgres://"+pgtest.PasswordUser+":"+secret+"@"+strings.TrimPrefix(base, pgtest.PasswordUser+"@"), opts)
	if err != nil {
		t.Fatalf("password in the URL: %v", err)
	}
	shown = append(shown, sink.Describe(s))
	if err := s.Write(bg, sinktest.Records("pw", 2)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	err = openErr(t, "postgres://"+pgtest.PasswordUser+":WrongPass-77@"+strings.TrimPrefix(base, pgtest.PasswordUser+"@"), opts)
	if err == nil || !strings.Contains(err.Error(), "password authentication failed") || errors.Is(err, backoff.ErrRetryable) || strings.Contains(err.Error(), "WrongPass-77") {
		t.Fatalf("a wrong password: %v", err)
	}
	shown = append(shown, err.Error())

	err = openErr(t, "postgres://"+base, opts)
	if err == nil || errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("no password at all: %v", err)
	}
	shown = append(shown, err.Error())

	t.Setenv("PGPASSWORD", secret)
	s = openSink(t, "postgres://"+base, "w")
	shown = append(shown, sink.Describe(s))
	s.Close()
	t.Setenv("PGPASSWORD", "")

	passfile := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(passfile, []byte(fmt.Sprintf("127.0.0.1:%d:*:%s:%s\n", srv.Port, pgtest.PasswordUser, secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", passfile)
	s = openSink(t, "postgres://"+base, "w")
	s.Close()

	shown = append(shown, logs.String())
	for _, text := range shown {
		if strings.Contains(text, secret) || strings.Contains(text, "WrongPass-77") {
			t.Fatalf("a password is shown: %s", text)
		}
	}
}

// TLS is verified: with the server's CA the connection is encrypted;
// without it, sslmode=require fails (it does not skip verification) and
// says how to name the CA; prefer on loopback falls back to plaintext.
func TestTLS(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	t.Setenv("HOME", t.TempDir()) // no ~/.postgresql/root.crt
	t.Setenv("PGSSLMODE", "")
	t.Setenv("PGSSLROOTCERT", "")
	ssl := func(app string) bool {
		t.Helper()
		var on bool
		queryRow(t, srv, db, "SELECT coalesce(bool_or(s.ssl), false) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = '"+app+"'", &on)
		return on
	}
	url := func(host, q string) string {
		return fmt.Sprintf("postgres://postgres@%s:%d/%s?table=papers&%s", host, srv.Port, db, q)
	}
	s := openSink(t, url("localhost", "sslmode=verify-full&application_name=tls_full&sslrootcert="+srv.CAFile), "w")
	if !ssl("tls_full") {
		t.Error("verify-full with the CA: the connection is not encrypted")
	}
	s.Close()
	s = openSink(t, url("127.0.0.1", "sslmode=require&application_name=tls_req&sslrootcert="+srv.CAFile), "w")
	if !ssl("tls_req") {
		t.Error("require with the CA: the connection is not encrypted")
	}
	s.Close()

	err := openErr(t, url("localhost", "sslmode=require"), sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "sslrootcert=FILE") || errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("require without the CA: %v", err)
	}
	s = openSink(t, url("localhost", "sslmode=prefer&application_name=tls_pref"), "w")
	if ssl("tls_pref") {
		t.Error("prefer without the CA on loopback: encrypted with an unverified certificate")
	}
	s.Close()
	s = openSink(t, url("127.0.0.1", "application_name=tls_default"), "w")
	if ssl("tls_default") {
		t.Error("loopback by default is plaintext")
	}
	s.Close()
}

// The socket form: postgres://USER@/DB?host=/socket/dir.
func TestSocket(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&table=papers", db, srv.Socket(), srv.Port)
	s := openSink(t, url, "w")
	if d := sink.Describe(s); !strings.Contains(d, "host="+srv.Socket()) {
		t.Errorf("description %q does not name the socket", d)
	}
	if err := s.Write(bg, sinktest.Records("sock", 3)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := len(readRecords(t, srv, db, "papers")); n != 3 {
		t.Fatalf("%d rows", n)
	}
}

// A server that goes away makes Write fail with a retryable error; once
// it is back, the next Write goes through on new connections.
func TestServerRestart(t *testing.T) {
	srv := pgtest.New(t)
	db := srv.NewDB(t)
	s := openSink(t, srv.URL(db, "table=papers", "timeout=5s"), "w")
	defer s.Close()
	if err := s.Write(bg, sinktest.Records("before", 5)); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	err := s.Write(bg, sinktest.Records("while-down", 5))
	if err == nil || !errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("write with the server down = %v, want a retryable error", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(bg, sinktest.Records("while-down", 5)); err != nil {
		t.Fatalf("write after the server came back: %v", err)
	}
	tok, _ := s.(sink.Committer).Token()
	if !strings.Contains(string(tok), `"commits":2`) {
		t.Errorf("token %s, want 2 commits", tok)
	}
	if n := len(readRecords(t, srv, db, "papers")); n != 10 {
		t.Fatalf("%d rows, want 10", n)
	}

	// A server without TLS, asked for it: said so, not retried.
	exec(t, srv, db, "ALTER SYSTEM SET ssl = off")
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	err = openErr(t, srv.URL(db, "table=papers", "sslmode=require"), sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "the server does not offer TLS") || errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("TLS asked of a server without it: %v", err)
	}
}

// A table or its companion dropped by hand is named at open, with what to
// do; nothing is made again behind the operator's back.
func TestDroppedByHand(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := srv.URL(db, "table=papers")
	s0 := openSink(t, url, "w")
	if err := s0.Write(bg, sinktest.Records("first", 3)); err != nil {
		t.Fatal(err)
	}
	tok0, _ := s0.(sink.Committer).Token()
	s0.Close()
	// The counts dropped, the papers kept: the table of counts is made
	// again, and the crawl counts on from its state.
	exec(t, srv, db, "DROP TABLE litcrawl_writers")
	s1 := openSink(t, url, "w")
	if err := s1.(sink.Restorer).Restore(bg, tok0); err != nil {
		t.Fatalf("restore after litcrawl_writers was dropped: %v", err)
	}
	if err := s1.Write(bg, sinktest.Records("second", 3)); err != nil {
		t.Fatal(err)
	}
	if tok, _ := s1.(sink.Committer).Token(); !strings.Contains(string(tok), `"commits":2`) {
		t.Errorf("token after counting on: %s", tok)
	}
	s1.Close()
	var err error
	exec(t, srv, db, "DROP TABLE papers")
	err = openErr(t, url, sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "table public.papers is gone") || !strings.Contains(err.Error(), "DELETE FROM") {
		t.Fatalf("table dropped: %v", err)
	}
	exec(t, srv, db, "DELETE FROM litcrawl_migrations WHERE table_name = 'papers'")
	s := openSink(t, url, "w")
	defer s.Close()
	if err := s.Write(bg, sinktest.Records("x", 1)); err != nil {
		t.Fatal(err)
	}
	tok, _ := s.(sink.Committer).Token()
	s.Close()
	// The state of a crawl that had written 5 commits to the old table
	// finds the new one behind it: no stale count vouches for it.
	var old map[string]any
	json.Unmarshal(tok, &old)
	old["commits"] = 5
	stale, _ := json.Marshal(old)
	s2 := openSink(t, url, "w")
	defer s2.Close()
	if err := s2.(sink.Restorer).Restore(bg, stale); err == nil || !strings.Contains(err.Error(), "behind the crawl state") {
		t.Fatalf("a state ahead of a table made anew: %v", err)
	}
}
