package parser

import (
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// reListingName matches the site's listing file names:
// literature_d{journal}.htm (page 1) and literature_d{journal}_{page}.htm.
var reListingName = regexp.MustCompile(`(?:^|[^A-Za-z0-9])literature_d(\d{1,18})(?:_(\d{1,9}))?\.html?$`)

// urlFacts reads the journal id and page number from a listing URL or a file
// path that follows the site's scheme. ok is false for anything else.
func urlFacts(s string) (journal int64, page int, ok bool) {
	if s == "" {
		return 0, 0, false
	}
	p := s
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		p = u.Path
	} else {
		p = strings.ReplaceAll(p, `\`, "/")
	}
	m := reListingName.FindStringSubmatch(path.Base(p))
	if m == nil {
		return 0, 0, false
	}
	journal, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || journal <= 0 {
		return 0, 0, false
	}
	page = 1
	if m[2] != "" {
		page, err = strconv.Atoi(m[2])
		if err != nil || page < 1 {
			return 0, 0, false
		}
	}
	return journal, page, true
}

// ListingURL reads the journal id and page number from a listing URL or
// file name (literature_d{journal}[_{page}].htm); ok is false for anything
// else.
func ListingURL(s string) (journal int64, page int, ok bool) { return urlFacts(s) }
