package parser

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// decodePaperStd is the reference: encoding/json into the same struct.
// kind is "ok", "type" (a field of the wrong type) or "syntax".
func decodePaperStd(b []byte) (p *paperJSON, kind string) {
	p = new(paperJSON)
	err := json.Unmarshal(b, p)
	var ute *json.UnmarshalTypeError
	switch {
	case err == nil:
		return p, "ok"
	case errors.As(err, &ute):
		return p, "type"
	}
	return nil, "syntax"
}

// exported copies the JSON-set fields only.
func exported(p *paperJSON) paperJSON {
	return paperJSON{Title: p.Title, Authors: p.Authors, DOI: p.DOI, DOIURL: p.DOIURL, Abstract: p.abstractText(),
		PeriodicalID: p.PeriodicalID, Journal: p.Journal, PeriodicalIF: p.PeriodicalIF,
		PublicationDate: p.PublicationDate, PublicationType: p.PublicationType, OpenAccessPDF: p.OpenAccessPDF,
		CitationCount: p.CitationCount, PaperID: p.PaperID, PeriodicalName: p.PeriodicalName,
		RegionNum: p.RegionNum, RegionCategory: p.RegionCategory, TitleCN: p.TitleCN,
		AbstractTextCN: p.AbstractTextCN, JCR: p.JCR, JCRName: p.JCRName}
}

// checkAgainstStd holds decodePaper to encoding/json: the same inputs are
// JSON, and where encoding/json decodes without a type error the fields are
// equal; where it meets a field of the wrong type, decodePaper still reads
// the object and flags it.
func checkAgainstStd(t *testing.T, b []byte) {
	t.Helper()
	if len(b) == 0 || b[0] != '{' {
		return // the scanner only hands over objects
	}
	want, kind := decodePaperStd(b)
	got, ok := decodePaper(b)
	switch kind {
	case "syntax":
		if ok {
			t.Fatalf("decodePaper accepted what encoding/json rejects: %q", b)
		}
	case "type":
		if !ok || !got.oddTypes {
			t.Fatalf("type error: ok=%v odd=%v for %q", ok, got != nil && got.oddTypes, b)
		}
	case "ok":
		if !ok {
			t.Fatalf("decodePaper rejected valid JSON %q", b)
		}
		if got.oddTypes || !reflect.DeepEqual(exported(got), exported(want)) {
			t.Fatalf("fields differ for %q:\n got %+v\nwant %+v", b, exported(got), exported(want))
		}
		// The one-pass plain abstract equals plainText of the decoded one.
		if g, w := got.plainAbstract(), plainText(want.Abstract); g != w {
			t.Fatalf("plain abstract differs for %q:\n got %q\nwant %q", b, g, w)
		}
	}
}

var decodeCases = []string{
	paperObj,
	`{}`,
	` { "title" : "t" , "paperid" : 12 } `,
	`{"Title":"folded key","PAPERID":"3","doi":"a","DOI":"b"}`,
	`{"title":"dup","title":"last wins","journal":{"name":"a","volume":"1"},"journal":{"pages":"p"}}`,
	`{"journal":null,"citationCount":null,"PeriodicalIF":null}`,
	`{"citationCount":5,"citationCount":null}`,
	`{"title":"\u00e9\ud83d\ude00\ud800x\udc00\u0000\/\b\f\n\r\t\\\""}`,
	"{\"title\":\"bad \xff utf8 \xe4\xb8\"}",
	`{"title":"ctl` + "\x01" + `"}`,
	`{"title":"unterminated}`,
	`{"title":1}`,
	`{"title":["a"],"paperid":"1","doi":"x"}`,
	`{"journal":"str","paperid":"2"}`,
	`{"journal":{"volume":{"x":1}},"title":"after"}`,
	`{"PeriodicalId":"12a","title":"after"}`,
	`{"n":-0.5e+10,"m":01}`,
	`{"n":1.}`,
	`{"a":[1,[2,{"b":[]}],"c"],"t":true,"f":false}`,
	`{"a":tru}`,
	`{"a":1,}`,
	`{"a" 1}`,
	`{"a":1} x`,
	`{"publicationTypes":["A","B"],"openAccessPdf":"u"}`,
	`{"abstract":"\u12"}`,
	`{"title":"\x"}`,
	`{"abstract":"  a\u0000\u0000b\u00a0 c\n\t<p>d</p> &amp; e \ud800 f\u2003"}`,
	"{\"abstract\":\" lead \xff\xfe trail \u3000\"}",
	`{"abstract":"x","abstract":null}`,
	`{"abstract":"x","Abstract":"y \u003cb\u003ebold\u003c/b\u003e"}`,
	`{"abstract":5}`,
	`{"abstract":""}`,
}

func TestDecodePaperMatchesEncodingJSON(t *testing.T) {
	for _, c := range decodeCases {
		checkAgainstStd(t, []byte(c))
	}
	// Every JSON object in the fixtures.
	for _, rel := range fixturePages(t) {
		data, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if i := strings.Index(l, `{"title"`); i >= 0 {
				end, state := matchObject(l, i, ptrInt(1<<30))
				if state == objComplete {
					checkAgainstStd(t, []byte(l[i:end]))
				}
			}
		}
	}
}

func TestDecodePaperDeepNesting(t *testing.T) {
	deep := `{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`
	if _, ok := decodePaper([]byte(deep)); ok {
		t.Error("nesting beyond 10,000 must be rejected, as encoding/json does")
	}
	ok10k := `{"a":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}`
	checkAgainstStd(t, []byte(ok10k))
}

func FuzzDecodePaper(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAgainstStd(t, b)
	})
}

func ptrInt(n int) *int { return &n }
