package sink

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// brokerURL is the common shape of the broker sinks' URLs:
// SCHEME://[USER[:PASS]@]HOST[:PORT][,HOST[:PORT]…]/NAME?PARAMS. It is
// parsed by hand: several hosts are not a valid host for net/url.
type brokerURL struct {
	user, pass string
	hasPass    bool
	hosts      []string
	name       string // the path without its leading slash, unescaped
	query      url.Values
}

// parseBrokerURL splits raw; the error text says what is wrong.
func parseBrokerURL(raw string) (*brokerURL, string) {
	b := &brokerURL{}
	_, rest, _ := strings.Cut(raw, "://")
	rest, query, _ := strings.Cut(rest, "?")
	hostPart, name, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(hostPart, "@"); at >= 0 {
		u, err := url.Parse("x://" + hostPart[:at] + "@x")
		if err != nil || u.User == nil {
			return nil, "unreadable user information before @ (percent-encode special characters)"
		}
		b.user = u.User.Username()
		b.pass, b.hasPass = u.User.Password()
		hostPart = hostPart[at+1:]
	}
	if hostPart != "" {
		for _, h := range strings.Split(hostPart, ",") {
			if h == "" || strings.ContainsAny(h, " /") {
				return nil, fmt.Sprintf("bad server %q in the host list", h)
			}
			b.hosts = append(b.hosts, h)
		}
	}
	var err error
	if b.name, err = url.PathUnescape(name); err != nil {
		return nil, "unreadable path: " + err.Error()
	}
	if b.query, err = url.ParseQuery(query); err != nil {
		return nil, "unreadable query: " + err.Error()
	}
	return b, ""
}

// tlsParams are the TLS parameters both broker sinks take. Verification is
// never turned off.
type tlsParams struct {
	on                bool
	ca, cert, keyFile string
}

// set reads a tls* parameter; handled is false for other keys.
func (t *tlsParams) set(key, val string) (handled bool, problem string) {
	switch key {
	case "tls":
		on, err := strconv.ParseBool(val)
		if err != nil {
			return true, fmt.Sprintf("tls=%q: expected true or false", val)
		}
		t.on = on
	case "tls_ca":
		t.ca, t.on = val, true
	case "tls_cert":
		t.cert, t.on = val, true
	case "tls_key":
		t.keyFile, t.on = val, true
	default:
		return false, ""
	}
	return true, ""
}

func (t *tlsParams) check() string {
	if (t.cert == "") != (t.keyFile == "") {
		return "tls_cert and tls_key go together"
	}
	return ""
}

// config builds the TLS configuration, or nil when TLS is off.
func (t *tlsParams) config() (*tls.Config, error) {
	if !t.on {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.ca != "" {
		pem, err := os.ReadFile(t.ca)
		if err != nil {
			return nil, fmt.Errorf("tls_ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls_ca %s: no certificate in it", t.ca)
		}
	}
	if t.cert != "" {
		cert, err := tls.LoadX509KeyPair(t.cert, t.keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls_cert/tls_key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
