package parser

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// An impact factor no float holds (a visible "IF" of 309 digits), or a
// JSON one of "NaN" or "Infinity", is dropped: a record carrying it could
// not be encoded, and its page would fail in every sink on every run.
func TestNonFiniteImpactFactorDropped(t *testing.T) {
	html, err := readRepoFile("fixtures/html/desktop/literature_d3342_3.htm")
	if err != nil {
		t.Fatal(err)
	}
	seed, err := readRepoFile("fixtures/seeds/000_92928c0d02c94ff5.txt")
	if err != nil {
		t.Fatal(err)
	}
	visible := regexp.MustCompile(`IF [0-9][0-9.]*`).ReplaceAllString(string(html), "IF "+strings.Repeat("9", 309))
	cases := map[string][]byte{
		"visible IF of 309 digits": []byte(visible),
		"JSON NaN":                 []byte(strings.ReplaceAll(string(seed), `"PeriodicalIF":0.0`, `"PeriodicalIF":"NaN"`)),
		"JSON Infinity":            []byte(strings.ReplaceAll(string(seed), `"PeriodicalIF":0.0`, `"PeriodicalIF":"Infinity"`)),
	}
	for name, data := range cases {
		page, err := Parse(data, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(page.Records) == 0 {
			t.Fatalf("%s: no records", name)
		}
		for _, r := range page.Records {
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("%s: record %s cannot be encoded: %v", name, r.ID, err)
			}
		}
	}
}
