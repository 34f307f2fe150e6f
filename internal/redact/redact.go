// Package redact is the one rule for keeping secrets out of what the
// program prints: the password or token in a URL's user information
// becomes REDACTED, in URLs, in free text that quotes URLs, and in error
// messages of clients that echo the URL they were given. Every log line,
// error, record and report goes through it where a URL may appear.
package redact

import (
	"net/url"
	"slices"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "REDACTED"

// userIsARole: in a URL of this scheme, a user name standing alone names
// a role, not a token, and is shown (PostgreSQL's: the password comes
// after it, or from the environment). In every other scheme a user name
// alone may be the secret itself (a NATS token, an API key) and is
// masked.
func userIsARole(scheme string) bool {
	return strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")
}

// URL hides the password (or a token standing alone, but a PostgreSQL
// role: userIsARole) in a URL's user information. Strings that are not URLs with user information come back
// unchanged; user information that cannot be parsed is dropped whole.
//
// Query parameters named like secrets (token, password, secret, key, …)
// are masked too, and so is "user:password@" before a host when there is
// no scheme at all.
func URL(raw string) string {
	// A list of servers, each with its scheme (nats://u:p@a,nats://u:p@b):
	// each is a URL of its own.
	if strings.Count(raw, "://") > 1 && strings.Contains(raw, ",") {
		parts := strings.Split(raw, ",")
		for i, p := range parts {
			parts[i] = URL(p)
		}
		return strings.Join(parts, ",")
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			j := strings.Index(raw, "://")
			switch {
			case j >= 0 && j < i:
				// Unparseable but holding user information: drop it whole.
				return raw[:j+3] + Mask + "@" + raw[i+1:]
			case j < 0:
				// No "://". A network scheme a slash or two short
				// ("https:/user:pa/ss@host", "nats:/TOKEN@host"): all
				// between the scheme's slashes and the last "@".
				if k := netSchemeEnd(raw); k > 0 && k < i {
					return raw[:k] + Mask + "@" + raw[i+1:]
				}
				// "user:password@host…": what follows the last slash
				// before the "@", when it holds a ':'.
				k := strings.LastIndexAny(raw[:i], `/\`)
				if strings.Contains(raw[k+1:i], ":") {
					return raw[:k+1] + Mask + "@" + raw[i+1:]
				}
			}
		}
		if err != nil || u.RawQuery == "" {
			return raw
		}
	}
	if u.User != nil {
		_, has := u.User.Password()
		switch {
		case has:
			u.User = url.UserPassword(u.User.Username(), Mask)
		case !userIsARole(u.Scheme):
			u.User = url.User(Mask)
		}
	}
	masked := false
	if q := u.Query(); len(q) > 0 {
		for k := range q {
			if secretParam(k) {
				q.Set(k, Mask)
				masked = true
			}
		}
		if masked {
			u.RawQuery = q.Encode()
		}
	}
	if u.User == nil && !masked {
		return raw
	}
	return u.String()
}

// secretParam reports whether a query parameter is named like a secret.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"token", "pass", "pwd", "secret", "key", "auth", "credential", "signature", "sig"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// Text redacts every URL with user information that msg quotes, and the
// user information of each of the given URLs wherever it appears in msg on
// its own (clients sometimes echo "user:password" without the URL around it).
func Text(msg string, urls ...string) string {
	for _, f := range strings.Fields(msg) {
		if strings.Contains(f, "://") && strings.Contains(f, "@") {
			msg = strings.ReplaceAll(msg, f, URL(f))
		}
	}
	for _, list := range urls {
		for _, raw := range strings.Split(list, ",") { // each server of a list
			info := userinfo(raw)
			if info == "" {
				continue
			}
			msg = strings.ReplaceAll(msg, info, Mask)
			if _, pass, ok := strings.Cut(info, ":"); ok && len(pass) >= 4 {
				msg = strings.ReplaceAll(msg, pass, Mask)
			}
		}
	}
	return msg
}

// Secrets hides each secret value (of 4 bytes or more: a shorter one would
// mask innocent text) wherever msg holds it, as written or escaped for a
// URL's query or path: a password a client echoes in its own words.
func Secrets(msg string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) >= 4 {
			for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
				msg = strings.ReplaceAll(msg, form, Mask)
			}
		}
	}
	return msg
}

// Error is err's message with Text applied; "" for a nil error.
func Error(err error, urls ...string) string {
	if err == nil {
		return ""
	}
	return Text(err.Error(), urls...)
}

// userinfo is the raw user information of every "scheme://info@host" in
// raw (a comma-separated server list included), as written.
func userinfo(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	host, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i > 0 {
		return host[:i]
	}
	return ""
}

// netSchemes are the schemes whose URLs carry credentials here.
var netSchemes = []string{"http", "https", "nats", "tls", "ws", "wss", "kafka", "postgres", "postgresql"}

// netSchemeEnd is where the user information would begin in raw, a URL
// of a network scheme written with fewer than two slashes (or with
// backslashes): after "scheme:" and its slashes; 0 for any other string.
func netSchemeEnd(raw string) int {
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok || !slices.ContainsFunc(netSchemes, func(s string) bool { return strings.EqualFold(s, scheme) }) {
		return 0
	}
	return len(raw) - len(strings.TrimLeft(rest, `/\`))
}
