package record_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/record"
)

// The shipped JSON Schema names exactly the fields the Record type writes,
// and lists every warning code.
func TestSchemaMatchesRecord(t *testing.T) {
	b, err := os.ReadFile("../schema/record.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]struct {
			Properties map[string]any `json:"properties"`
			Items      struct {
				Enum []string `json:"enum"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	check := func(typ reflect.Type, props map[string]any, where string) {
		for i := 0; i < typ.NumField(); i++ {
			name := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
			if _, ok := props[name]; !ok {
				t.Errorf("%s field %q is not in the schema", where, name)
			}
		}
		if len(props) != typ.NumField() {
			t.Errorf("%s: schema has %d properties, type has %d fields", where, len(props), typ.NumField())
		}
	}
	top := map[string]any{}
	for k := range schema.Properties {
		top[k] = true
	}
	check(reflect.TypeFor[record.Record](), top, "record")
	check(reflect.TypeFor[record.Journal](), schema.Properties["journal"].Properties, "journal")
	check(reflect.TypeFor[record.Source](), schema.Properties["source"].Properties, "source")
	codes := []string{record.WarnNoJSON, record.WarnJSONTruncated, record.WarnJSONVisibleMismatch, record.WarnJSONOddTypes, record.WarnNoTitle, record.WarnTextTruncated, record.WarnDOIConflict}
	if got := schema.Properties["warnings"].Items.Enum; !slices.Equal(got, codes) {
		t.Errorf("schema warning codes %q, want %q", got, codes)
	}
}

func ExampleTitleID() {
	fmt.Println(record.TitleID("  A Survey of  Federated Analytics ", ""))
	fmt.Println(record.DOIID(" 10.1000/JCI.2023.0911"))
	// Output:
	// title:d63f42d72054847e
	// doi:10.1000/jci.2023.0911
}

func TestAddWarningOnce(t *testing.T) {
	var r record.Record
	r.AddWarning(record.WarnNoJSON)
	r.AddWarning(record.WarnNoJSON)
	if !slices.Equal(r.Warnings, []string{record.WarnNoJSON}) {
		t.Errorf("warnings = %q", r.Warnings)
	}
}

// The schema of version 1 stays shipped, unchanged, to validate records
// written before version 2: it differs from the current one by exactly
// the version, journal.issue and the text-truncated and doi-conflict
// warnings.
func TestSchemaVersion1Kept(t *testing.T) {
	load := func(path string) map[string]any { return loadSchema(t, path) }
	v1, v2 := load("../schema/record.v1.schema.json"), load("../schema/record.v2.schema.json")
	props := func(m map[string]any) map[string]any { return m["properties"].(map[string]any) }
	if c := props(v1)["schema_version"].(map[string]any)["const"]; c != 1.0 {
		t.Errorf("v1 schema_version const %v", c)
	}
	if c := props(load("../schema/record.schema.json"))["schema_version"].(map[string]any)["const"]; c != float64(record.SchemaVersion) {
		t.Errorf("current schema_version const %v, the Go type writes %d", c, record.SchemaVersion)
	}
	if _, ok := props(props(v1)["journal"].(map[string]any))["issue"]; ok {
		t.Error("the v1 schema has journal.issue")
	}
	enum := func(m map[string]any) []any {
		return props(m)["warnings"].(map[string]any)["items"].(map[string]any)["enum"].([]any)
	}
	if slices.Contains(enum(v1), any(record.WarnTextTruncated)) || slices.Contains(enum(v1), any(record.WarnDOIConflict)) || len(enum(v2)) != len(enum(v1))+2 {
		t.Errorf("warning codes: v1 %v, v2 %v", enum(v1), enum(v2))
	}
	if len(props(v1)) != len(props(v2)) {
		t.Errorf("v1 has %d top-level properties, v2 %d", len(props(v1)), len(props(v2)))
	}
}

// The schema of version 2 stays shipped to validate records written
// before version 3: version 3 adds site_doi, holds doi to a DOI's form
// and arxiv_id to arXiv's, and changes nothing else.
func TestSchemaVersion2Kept(t *testing.T) {
	load := func(path string) map[string]any { return loadSchema(t, path)["properties"].(map[string]any) }
	v2, v3 := load("../schema/record.v2.schema.json"), load("../schema/record.v3.schema.json")
	if c := v2["schema_version"].(map[string]any)["const"]; c != 2.0 {
		t.Errorf("v2 schema_version const %v", c)
	}
	if _, ok := v2["site_doi"]; ok {
		t.Error("the v2 schema has site_doi")
	}
	if _, ok := v3["site_doi"]; !ok || len(v3) != len(v2)+1 {
		t.Errorf("v3 has %d properties, v2 %d: want exactly site_doi more", len(v3), len(v2))
	}
	for k, p := range v2 {
		switch k {
		case "schema_version", "id", "doi", "doi_url", "arxiv_id":
			continue
		}
		a, _ := json.Marshal(p)
		b, _ := json.Marshal(v3[k])
		if string(a) != string(b) {
			t.Errorf("property %s differs between v2 and v3:\n%s\n%s", k, a, b)
		}
	}
}

func ExampleParseDOI() {
	for _, s := range []string{"arxiv-2409.07232", "https://doi.org/10.1109/TPDS.2010.123", "doi:10.1016/j.x.2024.1", "CNKI:SUN:JSJX.0.2024-01-001", " 10.48550/arXiv.2409.07232 "} {
		id := record.ParseDOI(s)
		fmt.Printf("%q %q %q key=%s\n", id.DOI, id.ArxivID, id.Other, record.DOIKey(s))
	}
	// Output:
	// "10.48550/arXiv.2409.07232" "2409.07232" "" key=arxiv-2409.07232
	// "10.1109/TPDS.2010.123" "" "" key=10.1109/tpds.2010.123
	// "10.1016/j.x.2024.1" "" "" key=10.1016/j.x.2024.1
	// "" "" "CNKI:SUN:JSJX.0.2024-01-001" key=cnki:sun:jsjx.0.2024-01-001
	// "10.48550/arXiv.2409.07232" "2409.07232" "" key=arxiv-2409.07232
}

// DOIKey reads a value as ParseDOI does: the key is the lower-cased DOI
// (an arXiv DOI's is the site's arxiv- form), else the lower-cased value.
func FuzzDOIKey(f *testing.F) {
	for _, s := range []string{"arxiv-2409.07232", "10.48550/ARXIV.2409.07232", "https://doi.org/10.1/X", "doi: 10.1/y", "arxiv-2409.07232v2", " 10.48550/arXiv.2409.0723 ", "DOI:10.48550/arXiv.2409.07232"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id := record.ParseDOI(s)
		want := strings.ToLower(id.Other)
		switch {
		case id.ArxivID != "":
			want = "arxiv-" + strings.ToLower(id.ArxivID)
		case id.DOI != "":
			want = strings.ToLower(id.DOI)
		}
		if got := record.DOIKey(s); got != want {
			t.Fatalf("DOIKey(%q) = %q, ParseDOI gives %+v (key %q)", s, got, id, want)
		}
	})
}

// IsDOI agrees with the schema's pattern for doi.
func FuzzIsDOI(f *testing.F) {
	re := regexp.MustCompile(`^10\.[0-9]{4,9}(?:\.[0-9]+)*/[^\s\p{Z}\p{Cc}\p{Cf}\x{FFFD}]+$`)
	for _, s := range []string{"10.1109/TPDS.2010.123", "10.1000.1/x", "10.123/x", "10.12345/a b", "10.12345/\u00a0", "10.1234./x", "10.1234/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		if got, want := record.IsDOI(s), re.MatchString(s); got != want {
			t.Fatalf("IsDOI(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}

// loadSchema reads a shipped JSON Schema.
func loadSchema(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// doi_url names the whole DOI (reserved characters escaped), a
// resolver's query is no part of a DOI, invisible characters make no
// DOI, and only real arXiv ids are arXiv's.
func TestDOIForms(t *testing.T) {
	for in, want := range map[string]string{"10.1000/abc#1": "https://doi.org/10.1000/abc%231", "10.1000/a?b%c": "https://doi.org/10.1000/a%3Fb%25c",
		"10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0": "https://doi.org/10.1002/(SICI)1097-4571(199806)49:8%3C693::AID-ASI4%3E3.0.CO;2-0"} {
		if got := record.DOIURL(in); got != want {
			t.Errorf("DOIURL(%q) = %q, want %q", in, got, want)
		}
	}
	if id := record.ParseDOI("https://doi.org/10.1000/abc.1?utm_source=x"); id.DOI != "10.1000/abc.1" {
		t.Errorf("a resolver URL with a query: %+v", id)
	}
	if record.IsDOI("10.1000/abc.1\u200b") || record.IsDOI("10.1000/a\u202eb") {
		t.Error("a DOI with an invisible format character")
	}
	for in, arxiv := range map[string]bool{"arxiv-2409.07232": true, "arxiv-2413.00001": false, "arxiv-2409.7232": false, "arxiv-1412.1234": true, "arxiv-1412.12345": false} {
		if got := record.ParseDOI(in).ArxivID != ""; got != arxiv {
			t.Errorf("ParseDOI(%q) arXiv: %v, want %v", in, got, arxiv)
		}
	}
}

// The schema of version 3 stays shipped to validate records written
// before version 4: version 4 adds revision, changed and replaces, and
// changes nothing else.
func TestSchemaVersion3Kept(t *testing.T) {
	load := func(path string) map[string]any { return loadSchema(t, path)["properties"].(map[string]any) }
	v3, v4 := load("../schema/record.v3.schema.json"), load("../schema/record.schema.json")
	if c := v3["schema_version"].(map[string]any)["const"]; c != 3.0 {
		t.Errorf("v3 schema_version const %v", c)
	}
	for _, k := range []string{"revision", "changed", "replaces"} {
		if _, ok := v4[k]; !ok {
			t.Errorf("v4 has no %s", k)
		}
	}
	if len(v4) != len(v3)+3 {
		t.Errorf("v4 has %d properties, v3 %d: want exactly revision, changed and replaces more", len(v4), len(v3))
	}
	for k, p := range v3 {
		if k == "schema_version" {
			continue
		}
		a, _ := json.Marshal(p)
		b, _ := json.Marshal(v4[k])
		if string(a) != string(b) {
			t.Errorf("property %s differs between v3 and v4:\n%s\n%s", k, a, b)
		}
	}
}
