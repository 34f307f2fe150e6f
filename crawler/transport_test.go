package crawler

import (
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

func siteClient(t *testing.T, cfg TransportConfig) (*testsite.Site, *httptest.Server, *http.Client) {
	t.Helper()
	site := testsite.New()
	if _, err := site.LoadDir("../fixtures/html"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	cfg.Ports = []string{portOf(srv)}
	return site, srv, &http.Client{Transport: NewTransport(srv.Client().Transport, cfg)}
}

func read(c *http.Client, url string) ([]byte, *http.Response, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp, err
}

func TestTransportAllowsOnlyConfiguredHosts(t *testing.T) {
	site, srv, c := siteClient(t, TransportConfig{AllowedHosts: []string{"127.0.0.1"}, UserAgent: "litcrawl-test"})
	if _, resp, err := read(c, srv.URL+"/literature_d501422.htm"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("allowed host: %v", err)
	}
	// A redirect to another host is refused, not followed.
	site.Inject("/literature_d501422.htm", testsite.Fault{Kind: testsite.RedirectAway, Location: "http://elsewhere.example/x"})
	_, _, err := read(c, srv.URL+"/literature_d501422.htm")
	if !errors.Is(err, ErrOffsite) || backoff.IsRetryable(err) {
		t.Fatalf("redirect away: %v (retryable %v)", err, backoff.IsRetryable(err))
	}
	_, _, err = read(&http.Client{Transport: NewTransport(srv.Client().Transport, TransportConfig{AllowedHosts: []string{"m.booksci.cn"}})}, srv.URL+"/x")
	if !errors.Is(err, ErrOffsite) {
		t.Fatalf("a host not in the list: %v", err)
	}
}

func TestTransportSetsUserAgent(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.UserAgent() }))
	defer srv.Close()
	c := &http.Client{Transport: NewTransport(nil, TransportConfig{AllowedHosts: []string{"127.0.0.1"}, Ports: []string{portOf(srv)}, UserAgent: "litcrawl/1 (+contact)"})}
	if _, _, err := read(c, srv.URL); err != nil || got != "litcrawl/1 (+contact)" {
		t.Errorf("User-Agent = %q (%v)", got, err)
	}
}

// A body over the cap is an error, whether or not the server announced its
// length; a body exactly at the cap is fine.
func TestTransportCapsBodies(t *testing.T) {
	body := strings.Repeat("x", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.Write([]byte(body[:500]))
			w.(http.Flusher).Flush() // no Content-Length: chunked
			w.Write([]byte(body[500:]))
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	for _, limit := range []int64{999, 1000} {
		c := &http.Client{Transport: NewTransport(nil, TransportConfig{AllowedHosts: []string{srv.Listener.Addr().String()}, MaxBodyBytes: limit})}
		for _, path := range []string{"/", "/chunked"} {
			b, _, err := read(c, srv.URL+path)
			switch {
			case limit == 999 && !errors.Is(err, ErrBodyTooLarge):
				t.Errorf("cap %d %s: err %v", limit, path, err)
			case limit == 1000 && (err != nil || len(b) != 1000):
				t.Errorf("cap %d %s: %d bytes, err %v", limit, path, len(b), err)
			}
		}
	}
}

func portOf(srv *httptest.Server) string {
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// An allowed host is allowed on its ports only: a redirect to another
// port of the same host is refused like one to another host; "host:port"
// allows that port alone.
func TestTransportChecksPorts(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the other port was reached") }))
	defer other.Close()
	site, srv, c := siteClient(t, TransportConfig{AllowedHosts: []string{"127.0.0.1"}})
	site.Inject("/literature_d501422.htm", testsite.Fault{Kind: testsite.RedirectAway, Location: other.URL + "/x"})
	if _, _, err := read(c, srv.URL+"/literature_d501422.htm"); !errors.Is(err, ErrOffsite) || backoff.IsRetryable(err) {
		t.Fatalf("redirect to another port: %v, want a permanent off-site error", err)
	}
	c = &http.Client{Transport: NewTransport(nil, TransportConfig{AllowedHosts: []string{other.Listener.Addr().String()}})}
	if _, _, err := read(c, srv.URL+"/literature_d501422.htm"); !errors.Is(err, ErrOffsite) {
		t.Fatalf("host:port allows that port alone: %v", err)
	}
	c = &http.Client{Transport: NewTransport(nil, TransportConfig{AllowedHosts: []string{"127.0.0.1"}})}
	if _, _, err := read(c, srv.URL+"/literature_d501422.htm"); !errors.Is(err, ErrOffsite) {
		t.Fatalf("a bare host allows ports 80 and 443 by default, not %s: %v", portOf(srv), err)
	}
}

// User info becomes Basic auth for the base URL's origin only: a redirect
// to another allowed host or port does not carry it.
func TestTransportSendsBasicAuthToItsOriginOnly(t *testing.T) {
	var got []string
	var mu sync.Mutex
	handler := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/first" {
			http.Redirect(w, r, "http://localhost:"+portOf2(r)+"/second", http.StatusFound)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(handler))
	defer srv.Close()
	c := &http.Client{Transport: NewTransport(nil, TransportConfig{AllowedHosts: []string{"127.0.0.1", "localhost"}, Ports: []string{portOf(srv)},
		BasicAuth: url.UserPassword("ann", "s3cret"), AuthOrigin: srv.URL})}
	if _, _, err := read(c, srv.URL+"/first"); err != nil {
		t.Fatal(err)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("ann:s3cret"))
	if len(got) != 2 || !strings.HasSuffix(got[0], " "+want) || strings.Contains(got[1], "Basic") {
		t.Errorf("requests %q: want Basic auth on the first only", got)
	}
}

// A redirect to a URL with user information is refused, and the message
// does not show it.
func TestTransportRefusesUserInfoURLs(t *testing.T) {
	site, srv, c := siteClient(t, TransportConfig{AllowedHosts: []string{"127.0.0.1"}})
	site.Inject("/literature_d501422.htm", testsite.Fault{Kind: testsite.RedirectAway, Location: strings.Replace(srv.URL, "http://", "http://alice:PW1234@", 1) + "/x"})
	_, _, err := read(c, srv.URL+"/literature_d501422.htm")
	if !errors.Is(err, ErrOffsite) || strings.Contains(err.Error(), "PW1234") {
		t.Fatalf("redirect to a URL with user info: %v", err)
	}
}

func portOf2(r *http.Request) string {
	_, port, _ := net.SplitHostPort(r.Host)
	return port
}
