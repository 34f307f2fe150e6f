package parser

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Objects with a title that are not papers (an advert in a data-
// attribute, a tracking object with a title and a DOI, a login prompt)
// are not delivered as papers: they are counted in the page's
// json-not-paper warning. Odd author types keep the visible names in
// authors, not in the abstract.
func TestNonPaperJSONIsRejected(t *testing.T) {
	page := parseFixture(t, "fixtures/edge/hostile-json.htm")
	var ids []string
	for _, r := range page.Records {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"JTC-0001", "JTC-0002"}) {
		t.Errorf("ids %q: want the two papers only", ids)
	}
	if page.JSONRejected != 3 || !slices.Contains(page.Warnings, PageWarnJSONNotPaper) {
		t.Errorf("rejected %d objects, page warnings %q; want 3 and %s", page.JSONRejected, page.Warnings, PageWarnJSONNotPaper)
	}
	if a := page.Records[0].Authors; !slices.Equal(a, []string{"Ann Lee", "Bo Chen"}) {
		t.Errorf("authors as a JSON list: %q", a)
	}
	r := page.Records[1]
	if !slices.Equal(r.Authors, []string{"Cy Dee", "Ed Fox", "Flo Gray"}) || r.Abstract != "Authors given as a number in the data must not push the visible names into the abstract." {
		t.Errorf("authors as a number: authors %q, abstract %q", r.Authors, r.Abstract)
	}
}

// On a page of JSON alone (no visible paper block), an object of the
// paper shape is a paper, and one with a title and a single other field
// is not.
func TestJSONOnlyPageKeepsPaperShapedObjects(t *testing.T) {
	html := `<html><head><meta charset="utf-8"></head><body><script type="application/json">[` +
		`{"title":"A Paper Alone","doi":"10.5555/alone.1","paperid":"ALONE-1","authors":"Ann Lee"},` +
		`{"title":"Another Paper Alone","paperid":"ALONE-2","publicationDate":"2024-01-02"},` +
		`{"title":"Buy cheap pills","paperid":"TRAP-AD"}]</script></body></html>`
	page, err := Parse([]byte(html), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range page.Records {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"ALONE-1", "ALONE-2"}) || page.JSONRejected != 1 {
		t.Errorf("ids %q, rejected %d; want ALONE-1, ALONE-2 and one rejected", ids, page.JSONRejected)
	}
}

// An advert that shows its own title beside its JSON, but has no head line
// and not the paper shape, is not a paper either.
func TestAdvertWithItsOwnTitleIsRejected(t *testing.T) {
	page := parseFixture(t, "fixtures/edge/hostile-json.htm")
	want := len(page.Records)
	html := strings.Replace(string(mustRead(t, "../fixtures/edge/hostile-json.htm")), `</ul>`,
		`<li><div class="title">Buy cheap pills today</div><div class="ad" data-ad='{"title":"Buy cheap pills today","paperid":"TRAP-AD2"}'>广告</div></li></ul>`, 1)
	got, err := Parse([]byte(html), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Records {
		if r.ID == "TRAP-AD2" {
			t.Fatalf("the advert was delivered as a paper")
		}
	}
	if len(got.Records) != want {
		t.Errorf("%d records, want %d", len(got.Records), want)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
