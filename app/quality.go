package app

import (
	"github.com/litcrawl/litcrawl/config"
	"github.com/litcrawl/litcrawl/engine"
	"github.com/litcrawl/litcrawl/quality"
)

// qualityAlarm is the quality gate (quality.Check) as the run's error.
func qualityAlarm(t config.Quality, q engine.Quality) error {
	if err := quality.Check(t, q); err != nil {
		return &QualityError{err.Error()}
	}
	return nil
}
