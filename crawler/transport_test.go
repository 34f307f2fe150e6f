package crawler

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/testsite"
)

func siteClient(t *testing.T, cfg TransportConfig) (*testsite.Site, *httptest.Server, *http.Client) {
	t.Helper()
	site := testsite.New()
	if _, err := site.LoadDir("../fixtures/html"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
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
	if !errors.Is(err, ErrOffsite) || IsRetryable(err) {
		t.Fatalf("redirect away: %v (retryable %v)", err, IsRetryable(err))
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
	c := &http.Client{Transport: NewTransport(nil, TransportConfig{AllowedHosts: []string{"127.0.0.1"}, UserAgent: "litcrawl/1 (+contact)"})}
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
		c := &http.Client{Transport: NewTransport(nil, TransportConfig{AllowedHosts: []string{"127.0.0.1"}, MaxBodyBytes: limit})}
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
