package crawler

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/litcrawl/litcrawl/internal/redact"
)

// TransportConfig is the fetch rules every request obeys.
type TransportConfig struct {
	// AllowedHosts are the only hosts fetched: "host" on one of Ports, or
	// "host:port" on that port alone. A redirect anywhere else (another
	// host, or another port of an allowed host) is refused too, since
	// every hop comes through the transport.
	AllowedHosts []string
	// Ports are the ports of an allowed host given without one (default:
	// 80 and 443).
	Ports []string
	// BasicAuth, when set, is sent as HTTP Basic auth on requests to
	// AuthOrigin (scheme://host:port) only, never to another host or port.
	BasicAuth  *url.Userinfo
	AuthOrigin string
	// MaxBodyBytes caps a response body; a larger one fails with
	// ErrBodyTooLarge instead of being cut silently.
	MaxBodyBytes int64
	// UserAgent is sent with every request that has none.
	UserAgent string
}

// pooledTransport is http.DefaultTransport's configuration keeping
// perHost idle connections a host: with its default of 2, a crawl of
// concurrency 16 closes most connections after one response and dials
// again (a TCP and TLS handshake a page, for the crawler and the site).
func pooledTransport(perHost int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = max(perHost, http.DefaultMaxIdleConnsPerHost)
	t.MaxIdleConns = max(t.MaxIdleConns, 4*t.MaxIdleConnsPerHost)
	return t
}

// NewTransport wraps base (nil: http.DefaultTransport) with the rules.
// Archive recording and replay (another RoundTripper) go below or above it
// without touching the crawl loop.
func NewTransport(base http.RoundTripper, cfg TransportConfig) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	ports := cfg.Ports
	if len(ports) == 0 {
		ports = []string{"80", "443"}
	}
	allowed := make(map[string]bool, len(cfg.AllowedHosts)*len(ports))
	for _, h := range cfg.AllowedHosts {
		h = strings.ToLower(h)
		if host, port, err := net.SplitHostPort(h); err == nil {
			allowed[net.JoinHostPort(host, port)] = true
			continue
		}
		for _, p := range ports {
			allowed[net.JoinHostPort(strings.Trim(h, "[]"), p)] = true
		}
	}
	return &transport{base: base, cfg: cfg, allowed: allowed}
}

// hostPort is u's host and port, the scheme's default port when u names
// none, in the form the allowed set holds.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// origin is u's scheme://host:port.
func origin(u *url.URL) string { return u.Scheme + "://" + hostPort(u) }

type transport struct {
	base    http.RoundTripper
	cfg     TransportConfig
	allowed map[string]bool
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.User != nil {
		// A URL with user information (a redirect that carries some):
		// refused, and shown redacted (the one rule: redact.URL).
		return nil, &FetchError{URL: redact.URL(req.URL.String()), Err: fmt.Errorf("%w: a URL with user information", ErrOffsite)}
	}
	if !t.allowed[hostPort(req.URL)] {
		return nil, &FetchError{URL: redact.URL(req.URL.String()), Err: fmt.Errorf("%w: %s", ErrOffsite, req.URL.Host)}
	}
	if t.cfg.UserAgent != "" && req.Header.Get("User-Agent") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("User-Agent", t.cfg.UserAgent)
	}
	if t.cfg.BasicAuth != nil {
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
		if a, err := url.Parse(t.cfg.AuthOrigin); err == nil && origin(req.URL) == origin(a) {
			pw, _ := t.cfg.BasicAuth.Password()
			req.SetBasicAuth(t.cfg.BasicAuth.Username(), pw)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if t.cfg.MaxBodyBytes > 0 {
		if resp.ContentLength > t.cfg.MaxBodyBytes {
			resp.Body.Close()
			return nil, &FetchError{URL: redact.URL(req.URL.String()), Status: resp.StatusCode,
				Err: fmt.Errorf("%w: Content-Length %d > %d", ErrBodyTooLarge, resp.ContentLength, t.cfg.MaxBodyBytes)}
		}
		resp.Body = &capReader{rc: resp.Body, left: t.cfg.MaxBodyBytes, limit: t.cfg.MaxBodyBytes}
	}
	return resp, nil
}

// capReader fails with ErrBodyTooLarge once more than limit bytes arrive.
type capReader struct {
	rc          io.ReadCloser
	left, limit int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, fmt.Errorf("%w (%d bytes)", ErrBodyTooLarge, c.limit)
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1] // one byte past the cap tells "too large" from "exactly at it"
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n + int(c.left), fmt.Errorf("%w (%d bytes)", ErrBodyTooLarge, c.limit)
	}
	return n, err
}

func (c *capReader) Close() error {
	// Drain a little so the connection can be reused, then close.
	io.CopyN(io.Discard, c.rc, 4<<10)
	return c.rc.Close()
}
