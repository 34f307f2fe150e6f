package site

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/litcrawl/litcrawl/internal/redact"
)

// CheckBaseURL is the one rule of the site's base URL, in the file
// (site.base_url), on the command line (--base-url) and in the HTTP
// fetcher's configuration (crawler.Config.BaseURL): an http(s) URL
// with a host, a port from 1 to 65535 when it names one, no query or
// fragment. The error shows the URL redacted and says what is expected.
func CheckBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(raw, "?#") {
		shown := "(unreadable URL)"
		if err == nil {
			shown = redact.URL(raw)
		}
		return nil, fmt.Errorf("%q: expected an http(s) URL such as https://m.booksci.cn, without query or fragment", shown)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q: expected a port from 1 to 65535", redact.URL(raw))
		}
	}
	return u, nil
}
