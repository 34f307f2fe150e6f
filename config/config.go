// Package config loads config.yaml into plain structs: defaults first, then
// the file, then validation that names the key, the value and what is
// expected. Flags override the file (the commands do that); environment
// variables are only for secrets and are read by the parts that need them.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/litcrawl/litcrawl/sink"
)

// DefaultPath is where the commands look when --config is not given.
const DefaultPath = "config.yaml"

// Config is the whole file.
type Config struct {
	// Sinks are the sink URLs records go to (see the README's sink table);
	// empty means standard output. --sink flags replace the list.
	Sinks []string `yaml:"sinks"`
}

// Default is the configuration with no file.
func Default() *Config {
	c := &Config{}
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {}

// Validate checks every value and names the first bad one by its key.
func (c *Config) Validate() error {
	for i, u := range c.Sinks {
		if err := sink.CheckURL(u); err != nil {
			return fmt.Errorf("sinks[%d]: %w", i, err)
		}
	}
	return nil
}

// Load reads path. A missing file is an error unless optional is true (the
// default path may be absent: defaults apply). Unknown keys are errors, so a
// typo never silently falls back to a default.
func Load(path string, optional bool) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && optional {
		return Default(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}
