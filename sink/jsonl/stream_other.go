//go:build !unix

package jsonl

import "os"

// openStream opens a device or a named pipe for writing.
func openStream(path string) (*os.File, error) { return os.OpenFile(path, os.O_WRONLY, 0) }
