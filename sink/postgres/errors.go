package postgres

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/sink"
)

// Error is a failure of the sink, its message free of secrets. Unwrap
// gives the driver's error.
type Error struct {
	msg string
	err error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.err }

// fail explains err (while doing op) naming the table, and marks it
// retryable when a retry may mend it: a connection lost or refused, a
// server shutting down or starting, a serialization failure or deadlock,
// a lock or statement timeout, a server out of connections or disk. A
// table of the wrong shape, a missing privilege, a failed login or an
// untrusted certificate are not retried. A lost connection also drops the
// pool's other connections, which are likely gone too.
func (s *pgSink) fail(ctx context.Context, op string, err error) error {
	table := s.cfg.qualified()
	if s.n.display != "" {
		table = s.n.display
	}
	msg := fmt.Sprintf("postgres %s (table %s): %s: %s", s.cfg.description, table, op, explain(err, s.n, op == opMigrate))
	e := &Error{msg: msg, err: err}
	if refused(err) {
		return sink.Refused(e)
	}
	if !retryable(ctx, err) {
		return e
	}
	if connectionLost(err) {
		s.pool.Reset()
	}
	return backoff.Retryable(e)
}

// explain is err in words for an operator; for a server error, its
// message, detail, hint and code, and what to do about a privilege or a
// table that changed.
func explain(err error, n names, migrating bool) string {
	if isConfigError(err) {
		return err.Error()
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.Detail != "" {
			msg += " (" + pe.Detail + ")"
		}
		if pe.Hint != "" {
			msg += "; hint: " + pe.Hint
		}
		msg += " [SQLSTATE " + pe.Code + "]"
		switch pe.Code {
		case "42501": // insufficient_privilege
			if migrating {
				msg += fmt.Sprintf(": making the table takes CREATE on schema %s, migrating it takes owning it; either records itself in %s (INSERT)", n.schema, n.displayMigrations)
			} else {
				msg += fmt.Sprintf(": the sink needs SELECT, INSERT and UPDATE on %s and %s (GRANT SELECT, INSERT, UPDATE ON %s, %s TO the crawl's user)", n.display, n.writers, n.qTable, n.qWriters)
			}
		case "42P01", "42703", "42804", "42P10": // undefined table or column, datatype mismatch, no unique index for ON CONFLICT
			msg += ": the table's shape changed while the sink was open (altered or dropped by hand?)"
		case "28P01", "28000":
			msg += ": check the user and its password (the URL's user information, PGPASSWORD or the password file)"
		}
		return msg
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		// The driver names the user and database; the cause follows.
		text := ce.Error()
		if inner := errors.Unwrap(ce); inner != nil {
			text = inner.Error()
		}
		var he x509.HostnameError
		switch {
		case errors.As(err, &he):
			text += ": the server's certificate is not for the host name connected to: connect by a name it holds, or, with its CA, sslmode=verify-ca (the chain, not the name)"
		case isTLSTrust(err):
			text += ": the server's certificate is not trusted: name its CA with sslrootcert=FILE (or, on a network you trust, sslmode=disable)"
		case strings.Contains(text, "server refused TLS connection"):
			text += ": the server does not offer TLS, which the connection asks for (its sslmode, or the default off loopback): turn TLS on at the server, or, on a network you trust, use sslmode=disable"
		}
		return "cannot connect: " + text
	}
	return err.Error()
}

// opMigrate is the step that makes or migrates the table.
const opMigrate = "create or migrate the table"

// retryable: worth trying again with backoff.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() == context.Canceled {
		return false
	}
	if isConfigError(err) || isTLSTrust(err) || strings.Contains(err.Error(), "server refused TLS connection") {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"),       // insufficient resources: disk full, out of memory, too many connections
			pe.Code == "40001", pe.Code == "40P01", // serialization failure, deadlock
			pe.Code == "55P03",                                         // lock not available
			pe.Code == "57014",                                         // query canceled (a statement timeout)
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutting down, crashed, starting up
			pe.Code == "58030": // I/O error
			return true
		}
		return false
	}
	if connectionLost(err) || pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) // refused, unreachable, reset: the server may come back
}

// connectionLost: the connection broke or could not be made.
func connectionLost(err error) bool {
	var ne net.Error
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	return errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err)
}

// isTLSTrust: the server's certificate failed verification.
func isTLSTrust(err error) bool {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var ve *tls.CertificateVerificationError
	return errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &ve)
}

// refused: the server refused a value of the record, not the table or the
// connection: a character the database cannot hold (a NUL: 22P05, 22021),
// an escape it cannot read (22025, 22P06), or a row or index entry over a
// program limit (54000). The record goes to the quarantine (sink.ErrRefused).
// Other data exceptions (a value of the wrong type) come from a table whose
// shape changed, and fail every record alike: they stop the run.
func refused(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "22P05", "22021", "22025", "22P06", "54000":
		return true
	}
	return false
}
