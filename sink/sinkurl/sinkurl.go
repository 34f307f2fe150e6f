// Package sinkurl reads the URLs of the broker sinks, which share one
// shape: SCHEME://[USER[:PASS]@]HOST[:PORT][,HOST[:PORT]…]/NAME?PARAMS.
// A driver declares the query parameters it takes as a table of Params;
// Apply sets them and names an unknown one, so no driver writes its own
// loop over the query. TLS parameters are common to all.
package sinkurl

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/fskind"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/suggest"
	"github.com/litcrawl/litcrawl/sink"
)

// URL is a broker sink's URL, taken apart. It is parsed by hand: several
// hosts are not a valid host for net/url.
type URL struct {
	User, Pass string
	HasPass    bool // a password was given (user:pass@), not a token alone
	Hosts      []string
	Name       string // the path without its leading slash, unescaped
	Query      url.Values
	// Redacted is the URL with its password replaced, for messages.
	Redacted string
}

// Parse splits raw. A malformed URL is a *sink.URLError naming the
// redacted URL.
//
// A URL whose secret was likely mistyped is refused without being shown
// (Mistyped).
func Parse(raw string) (*URL, error) {
	if err := Mistyped(raw); err != nil {
		return nil, err
	}
	u := &URL{Redacted: redact.URL(raw)}
	_, rest, _ := strings.Cut(raw, "://")
	rest, query, _ := strings.Cut(rest, "?")
	hostPart, name, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(hostPart, "@"); at >= 0 {
		p, err := url.Parse("x://" + hostPart[:at] + "@x")
		if err != nil || p.User == nil {
			return nil, u.Errorf("unreadable user information before @ (percent-encode special characters)")
		}
		u.User = p.User.Username()
		u.Pass, u.HasPass = p.User.Password()
		hostPart = hostPart[at+1:]
	}
	if hostPart != "" {
		for _, h := range strings.Split(hostPart, ",") {
			if h == "" || strings.ContainsAny(h, " /") {
				return nil, u.Errorf("bad server %q in the host list", h)
			}
			if _, port, err := net.SplitHostPort(h); err == nil {
				if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
					return nil, u.Errorf("server %q: expected a port from 1 to 65535", h)
				}
			}
			u.Hosts = append(u.Hosts, h)
		}
	}
	var err error
	if u.Name, err = url.PathUnescape(name); err != nil {
		return nil, u.Errorf("unreadable path: %v", err)
	}
	if u.Query, err = url.ParseQuery(query); err != nil {
		return nil, u.Errorf("unreadable query: %v", err)
	}
	return u, nil
}

// Mistyped refuses, without showing it, a URL whose password or token was
// likely mistyped: one slash after the scheme, an @ after the host part (a
// secret holding ?, # or / unencoded, whose start a client would take for
// the host and echo in its errors), or an encoded @ where the host is.
func Mistyped(raw string) error {
	scheme, rest, _ := strings.Cut(raw, ":")
	shown := scheme + "://…"
	if !strings.HasPrefix(rest, "//") {
		return &sink.URLError{URL: shown, Reason: "expected " + scheme + "://[USER[:PASSWORD]@]HOST:PORT/… (two slashes after the scheme)"}
	}
	rest = rest[2:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, after := rest[:end], rest[end:]
	switch {
	case strings.Contains(after, "@"):
		return &sink.URLError{URL: shown, Reason: "an @ after the host (a password or token holding ?, # or / must be percent-encoded, or given in the environment): the URL is not shown, it may hold the secret"}
	case !strings.Contains(authority, "@") && strings.Contains(strings.ToLower(authority), "%40"):
		return &sink.URLError{URL: shown, Reason: "an encoded @ (%40) where the host is, and no @: the URL is not shown, it may hold the secret"}
	}
	return nil
}

// Errorf makes a *sink.URLError for this URL.
func (u *URL) Errorf(format string, a ...any) error {
	return &sink.URLError{URL: u.Redacted, Reason: fmt.Sprintf(format, a...)}
}

// Param is one query parameter a driver takes: Set reads its value and
// says, when it is wrong, what is expected ("expected true or false").
type Param struct {
	Name string
	Set  func(value string) error
}

// Apply sets every parameter of the query through its Param, in name
// order. An unknown parameter, one given twice, or a bad value is a
// *sink.URLError that names it.
func (u *URL) Apply(params ...Param) error {
	byName := make(map[string]Param, len(params))
	known := make([]string, 0, len(params))
	for _, p := range params {
		byName[p.Name] = p
		known = append(known, p.Name)
	}
	keys := make([]string, 0, len(u.Query))
	for k := range u.Query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := byName[k]
		if !ok {
			// Shown without the query: a mistyped secret's value
			// (tokne=…) is no parameter redact knows to hide.
			base, _, _ := strings.Cut(u.Redacted, "?")
			return &sink.URLError{URL: base, Reason: fmt.Sprintf("unknown parameter %q (known: %s)%s", k, strings.Join(known, ", "), suggest.DidYouMean(k, known...))}
		}
		if len(u.Query[k]) > 1 {
			return u.Errorf("parameter %q given %d times: give it once", k, len(u.Query[k]))
		}
		v := u.Query[k][0]
		if err := p.Set(v); err != nil {
			return u.Errorf("%s=%q: %v", k, v, err)
		}
	}
	return nil
}

// Bool is a true/false parameter.
func Bool(name string, dst *bool) Param {
	return Param{name, func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("expected true or false")
		}
		*dst = b
		return nil
	}}
}

// Duration is a positive duration parameter; example shows one ("10s").
func Duration(name string, dst *time.Duration, example string) Param {
	return Param{name, func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("expected a positive duration such as %s", example)
		}
		*dst = d
		return nil
	}}
}

// Int is a whole-number parameter from lo to hi; what names its unit
// ("a number of messages").
func Int(name string, dst *int, lo, hi int, what string) Param {
	return Param{name, func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("expected %s from %d to %d", what, lo, hi)
		}
		*dst = n
		return nil
	}}
}

// String is a parameter taken as it is.
func String(name string, dst *string) Param {
	return Param{name, func(v string) error { *dst = v; return nil }}
}

// OneOf is a parameter that takes one of the given values.
func OneOf(name string, dst *string, values ...string) Param {
	return Param{name, func(v string) error {
		for _, ok := range values {
			if v == ok {
				*dst = v
				return nil
			}
		}
		return fmt.Errorf("expected %s", orList(values))
	}}
}

func orList(vs []string) string {
	if len(vs) == 1 {
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// TLS is the TLS parameters every broker sink takes. Verification of the
// server's certificate is never turned off.
type TLS struct {
	On                bool
	CA, Cert, KeyFile string
}

// Params are tls, tls_ca, tls_cert and tls_key; naming a file turns TLS on.
func (t *TLS) Params() []Param {
	file := func(name string, dst *string) Param {
		return Param{name, func(v string) error { *dst, t.On = v, true; return nil }}
	}
	return []Param{Bool("tls", &t.On), file("tls_ca", &t.CA), file("tls_cert", &t.Cert), file("tls_key", &t.KeyFile)}
}

// Check says what is wrong with the parameters together ("" when nothing).
func (t *TLS) Check() string {
	if (t.Cert == "") != (t.KeyFile == "") {
		return "tls_cert and tls_key go together"
	}
	return ""
}

// With hands the TLS configuration to use when TLS is on (a client
// option), and does nothing when it is off.
func (t *TLS) With(use func(*tls.Config)) error {
	cfg, err := t.Config()
	if err == nil && cfg != nil {
		use(cfg)
	}
	return err
}

// Config builds the TLS configuration, or nil when TLS is off.
func (t *TLS) Config() (*tls.Config, error) {
	if !t.On {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	for _, f := range []struct{ name, path string }{{"tls_ca", t.CA}, {"tls_cert", t.Cert}, {"tls_key", t.KeyFile}} {
		if f.path == "" {
			continue
		}
		if err := SmallFile(f.path); err != nil {
			return nil, fmt.Errorf("%s %s: %w", f.name, f.path, err)
		}
	}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("tls_ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls_ca %s: no certificate in it", t.CA)
		}
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls_cert/tls_key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// MaxFileBytes bounds a file a sink URL names (a certificate, a key, a
// credentials, password or service file): they are a few KB.
const MaxFileBytes = 1 << 20

// SmallFile is the one rule of a file a sink URL (or the environment a
// driver reads) names: a regular file of at most MaxFileBytes, read to the
// bound — never a device, a FIFO or a directory the driver would read
// without end.
func SmallFile(p string) error {
	info, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("expected a readable file: %v", err)
	case !info.Mode().IsRegular():
		return fmt.Errorf("expected a regular file, not %s", fskind.Of(info.Mode()))
	case info.Size() > MaxFileBytes:
		return fmt.Errorf("expected a file of at most 1 MiB, not %d bytes", info.Size())
	}
	// A regular file's size can lie (/proc files say 0): read it, to the
	// bound, as the driver would read it whole.
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("expected a readable file: %v", err)
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return fmt.Errorf("expected a readable file: %v", err)
	}
	if n > MaxFileBytes {
		return fmt.Errorf("expected a file of at most 1 MiB, not one that reads longer")
	}
	return nil
}
