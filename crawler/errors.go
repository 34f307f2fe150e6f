package crawler

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/backoff"
)

// Sentinel errors callers branch on.
var (
	// ErrSoftBlock: a 200 page that is not a listing page (a captcha or
	// verification interstitial). Retryable, and it slows the host down.
	ErrSoftBlock = errors.New("soft block: the page is not a listing page")
	// ErrTruncated: the body ended early (connection cut, or shorter than
	// its Content-Length). Retryable; never committed.
	ErrTruncated = errors.New("truncated response body")
	// ErrBodyTooLarge: the body exceeded the configured cap. Permanent.
	ErrBodyTooLarge = errors.New("response body exceeds the size cap")
	// ErrOffsite: a request (or a redirect) to a host outside the allowed
	// hosts. Permanent.
	ErrOffsite = errors.New("host is not an allowed host")
	// ErrRobotsDisallowed: robots.txt disallows the URL. Permanent.
	ErrRobotsDisallowed = errors.New("disallowed by robots.txt")
	// ErrCircuitOpen: the host is cooling down after repeated failures.
	ErrCircuitOpen = errors.New("host circuit breaker is open")
	// ErrHostDown: the host's circuit opened fetch.breaker_max_opens times
	// in a row; its pages fail at once for the rest of the run (the next
	// run tries them again). Permanent for this run.
	ErrHostDown = errors.New("host is down: its circuit breaker opened fetch.breaker_max_opens times in a row; the page is left for the next run")
)

// robotsUnavailable: robots.txt could not be read after its retries.
// Permanent for the run: without it nothing of the host is fetched.
type robotsUnavailable struct{ err error }

func (e robotsUnavailable) Error() string {
	return fmt.Sprintf("robots.txt unavailable, so nothing of the host is fetched in this run (the next run tries again): %v", e.err)
}
func (e robotsUnavailable) Unwrap() error   { return e.err }
func (e robotsUnavailable) Permanent() bool { return true }

// FetchError is a failed fetch of one URL: the HTTP status when there was a
// response (0 otherwise), the server's Retry-After when it sent one, and
// the cause.
type FetchError struct {
	URL        string
	Status     int
	RetryAfter time.Duration
	Err        error
}

func (e *FetchError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("fetch %s: HTTP %d: %v", e.URL, e.Status, e.Err)
	}
	return fmt.Sprintf("fetch %s: %v", e.URL, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// Retryable reports whether trying again may succeed: network errors and
// timeouts, 408, 425, 429 and 5xx, truncated bodies and soft blocks. Other
// 4xx, oversized bodies, off-site URLs, robots.txt refusals and errors
// that say they are permanent (a Permanent() bool method) are permanent.
func (e *FetchError) Retryable() bool {
	if backoff.IsPermanent(e.Err) {
		return false // e.g. a URL missing from an offline archive
	}
	switch {
	case errors.Is(e.Err, ErrBodyTooLarge), errors.Is(e.Err, ErrOffsite), errors.Is(e.Err, ErrRobotsDisallowed), errors.Is(e.Err, ErrHostDown),
		errors.Is(e.Err, fetch.ErrUnreachable):
		return false
	case errors.Is(e.Err, ErrSoftBlock), errors.Is(e.Err, ErrTruncated), errors.Is(e.Err, ErrCircuitOpen):
		return true
	case e.Status == 0:
		return true
	}
	return retryableStatus(e.Status)
}

func retryableStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		return true
	case code >= 500 && code <= 599:
		return true
	}
	return false
}

// Is makes a retryable FetchError say so in the project's one way:
// errors.Is(err, backoff.ErrRetryable).
func (e *FetchError) Is(target error) bool { return target == backoff.ErrRetryable && e.Retryable() }

// maxRetryAfter is the longest Retry-After read: a larger one reads as
// this (about 292 years would overflow a time.Duration).
const maxRetryAfter = 100 * 365 * 24 * time.Hour

// ParseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date.
// ok is false when the value is absent or unreadable; a date in the past is
// a zero delay.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-") {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(maxRetryAfter/time.Second) || err != nil {
			return maxRetryAfter, true // beyond any cap: no overflow to a short wait
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// Cause names a failed try's kind, for summaries and metrics: network,
// http-5xx, http-429, http-NNN, truncated, soft-block, circuit-open or
// host-down.
func Cause(err error) string {
	var fe *FetchError
	switch {
	case errors.Is(err, ErrSoftBlock):
		return "soft-block"
	case errors.Is(err, ErrTruncated):
		return "truncated"
	case errors.Is(err, ErrCircuitOpen):
		return "circuit-open"
	case errors.Is(err, ErrHostDown):
		return "host-down"
	case errors.As(err, &fe) && fe.Status == http.StatusTooManyRequests:
		return "http-429"
	case errors.As(err, &fe) && fe.Status >= 500:
		return "http-5xx"
	case errors.As(err, &fe) && fe.Status != 0:
		return fmt.Sprintf("http-%d", fe.Status)
	}
	return "network"
}

// unreachableError is a page's failure when its host never answered: it
// says so, and the network's own words (a refused connection, a name that
// does not resolve), once, rather than every layer's URL.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string {
	return fetch.ErrUnreachable.Error() + " (" + rootCause(e.err) + ")"
}

func (e *unreachableError) Unwrap() []error { return []error{fetch.ErrUnreachable, e.err} }

// rootCause is what the network said: the dial's or the look-up's error,
// else the innermost error.
func rootCause(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &dns):
		return dns.Error()
	case errors.As(err, &op):
		return op.Error()
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

var _ fetch.Failure = (*FetchError)(nil)
