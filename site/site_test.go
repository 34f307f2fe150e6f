package site

import (
	"strings"
	"testing"
)

func TestDefaultFormatsAndParses(t *testing.T) {
	s := Default
	if got := s.URL("https://m.booksci.cn/", 501422, 1); got != "https://m.booksci.cn/literature_d501422.htm" {
		t.Errorf("page 1 URL = %s", got)
	}
	if got := s.Path(501422, 7); got != "/literature_d501422_7.htm" {
		t.Errorf("page 7 path = %s", got)
	}
	tests := []struct {
		in      string
		journal int64
		page    int
		ok      bool
	}{
		{"https://m.booksci.cn/literature_d501422_7.htm", 501422, 7, true},
		{"https://booksci.cn/literature_d501422.htm", 501422, 1, true},
		{"https://booksci.cn/literature_d501422.htm?x=1#top", 501422, 1, true},
		{"/literature_d12_3.htm", 12, 3, true},
		{"https://booksci.cn/literature/142210977.htm", 0, 0, false},
		{"https://booksci.cn/xliterature_d5_1.htm", 0, 0, false},
		{"https://booksci.cn/literature_d0_1.htm", 0, 0, false},
		{"https://booksci.cn/literature_d5_0.htm", 0, 0, false},
		{"https://booksci.cn/robots.txt", 0, 0, false},
		{"%zz", 0, 0, false},
	}
	for _, tt := range tests {
		j, p, ok := s.ParseURL(tt.in)
		if j != tt.journal || p != tt.page || ok != tt.ok {
			t.Errorf("ParseURL(%q) = %d, %d, %v; want %d, %d, %v", tt.in, j, p, ok, tt.journal, tt.page, tt.ok)
		}
	}
}

func TestParseFile(t *testing.T) {
	tests := []struct {
		in      string
		journal int64
		page    int
		ok      bool
	}{
		{"fixtures/html/flat-p/literature_d501422_2.htm", 501422, 2, true},
		{"fixtures/html/li-classes/literature_d501422.htm", 501422, 1, true},
		{"saved/mobile-literature_d12_3.html", 12, 3, true},
		{`C:\saved\literature_d12.htm`, 12, 1, true},
		{"fixtures/seeds/000_92928c0d02c94ff5.txt", 0, 0, false},
		{"xliterature_d5_1.htm", 0, 0, false},
		{"literature_d5_1.htm.bak", 0, 0, false},
	}
	for _, tt := range tests {
		j, p, ok := Default.ParseFile(tt.in)
		if j != tt.journal || p != tt.page || ok != tt.ok {
			t.Errorf("ParseFile(%q) = %d, %d, %v; want %d, %d, %v", tt.in, j, p, ok, tt.journal, tt.page, tt.ok)
		}
	}
}

// Any scheme a config can name round-trips: what URL makes, ParseURL reads.
func TestOtherSchemes(t *testing.T) {
	s, err := New("/journal/{journal}/latest", "/journal/{journal}/latest?page={page}")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.URL("http://h", 9, 4); got != "http://h/journal/9/latest?page=4" {
		t.Errorf("URL = %s", got)
	}
	for _, tt := range []struct {
		in      string
		journal int64
		page    int
	}{{"http://h/journal/9/latest?page=4", 9, 4}, {"http://h/journal/9/latest", 9, 1}} {
		if j, p, ok := s.ParseURL(tt.in); !ok || j != tt.journal || p != tt.page {
			t.Errorf("ParseURL(%q) = %d, %d, %v", tt.in, j, p, ok)
		}
	}
}

func TestNewRefusesBadTemplates(t *testing.T) {
	for _, tt := range []struct{ first, n, want string }{
		{"literature_d{journal}.htm", "/literature_d{journal}_{page}.htm", "starting with /"},
		{"/literature.htm", "/literature_d{journal}_{page}.htm", "holds {journal} once"},
		{"/literature_d{journal}_{page}.htm", "/literature_d{journal}_{page}.htm", "no {page}"},
		{"/literature_d{journal}.htm", "/literature_d{journal}.htm", "{journal} and {page} once each"},
		{"/l{journal}.htm", "/l{journal}{page}.htm", "something between them"},
		{"/l/{journal}", "/l/{journal}", "{journal} and {page}"},
		{"/l/{journal}.htm", "/l/{journal}.htm?p={page}&x={page}", "once each"},
		{"/d{journal}.htm", "/d{journal}7{page}.htm", "a digit next to {journal} or {page}"},
		{"/d2{journal}.htm", "/d{journal}_{page}.htm", "a digit next to"},
	} {
		if _, err := New(tt.first, tt.n); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%q, %q) = %v, want an error with %q", tt.first, tt.n, err, tt.want)
		}
	}
	// Templates that read each other's pages.
	if _, err := New("/a/{journal}_2.htm", "/a/{journal}_{page}.htm"); err == nil || !strings.Contains(err.Error(), "tell their pages apart") {
		t.Errorf("ambiguous templates: %v", err)
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"https://m.booksci.cn/literature_d501422_7.htm", "/literature_d1.htm", "%", "literature_d99999999999999999999_1.htm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		j, p, ok := Default.ParseURL(s)
		if !ok {
			return
		}
		if j <= 0 || p < 1 {
			t.Fatalf("ParseURL(%q) = %d, %d, true", s, j, p)
		}
		// What it reads formats back to a URL that reads the same.
		if j2, p2, ok2 := Default.ParseURL(Default.URL("http://h", j, p)); !ok2 || j2 != j || p2 != p {
			t.Fatalf("round trip of %q: %d %d → %d %d %v", s, j, p, j2, p2, ok2)
		}
		Default.ParseFile(s)
	})
}
