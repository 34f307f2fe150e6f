package record_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

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
	codes := []string{record.WarnNoJSON, record.WarnJSONTruncated, record.WarnJSONVisibleMismatch, record.WarnJSONOddTypes, record.WarnNoTitle, record.WarnTextTruncated}
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
