package crawler

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// TransportConfig is the fetch rules every request obeys.
type TransportConfig struct {
	// AllowedHosts are the only host names fetched (ports are ignored);
	// a redirect to any other host is refused too, since every hop comes
	// through the transport.
	AllowedHosts []string
	// MaxBodyBytes caps a response body; a larger one fails with
	// ErrBodyTooLarge instead of being cut silently.
	MaxBodyBytes int64
	// UserAgent is sent with every request that has none.
	UserAgent string
}

// NewTransport wraps base (nil: http.DefaultTransport) with the rules.
// Archive recording and replay (another RoundTripper) go below or above it
// without touching the crawl loop.
func NewTransport(base http.RoundTripper, cfg TransportConfig) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	allowed := make(map[string]bool, len(cfg.AllowedHosts))
	for _, h := range cfg.AllowedHosts {
		allowed[strings.ToLower(h)] = true
	}
	return &transport{base: base, cfg: cfg, allowed: allowed}
}

type transport struct {
	base    http.RoundTripper
	cfg     TransportConfig
	allowed map[string]bool
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.allowed[strings.ToLower(req.URL.Hostname())] {
		return nil, &FetchError{URL: req.URL.Redacted(), Err: fmt.Errorf("%w: %s", ErrOffsite, req.URL.Hostname())}
	}
	if t.cfg.UserAgent != "" && req.Header.Get("User-Agent") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("User-Agent", t.cfg.UserAgent)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if t.cfg.MaxBodyBytes > 0 {
		if resp.ContentLength > t.cfg.MaxBodyBytes {
			resp.Body.Close()
			return nil, &FetchError{URL: req.URL.Redacted(), Status: resp.StatusCode,
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
