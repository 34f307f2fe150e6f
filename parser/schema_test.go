package parser

import (
	"bytes"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/litcrawl/litcrawl/record"
)

// The shipped JSON Schema (schema/record.schema.json), compiled once;
// every record the golden and fuzz tests make must validate against it.
var recordSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	f, err := os.Open("../schema/record.schema.json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const loc = "https://github.com/litcrawl/litcrawl/schema/record.schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
})

// validRecord checks one record against the schema.
func validRecord(t testing.TB, r record.Record) error {
	t.Helper()
	sch, err := recordSchema()
	if err != nil {
		t.Fatalf("the record schema: %v", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}
