//go:build unix

package jsonl

import (
	"errors"
	"os"
	"syscall"
)

// openStream opens a device or a named pipe for writing. A pipe without a
// reader fails at once (opening it would wait for one without end, the
// run holding its state's lock): its reader starts first.
func openStream(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		return nil, errors.New("a named pipe with no reader: start the program that reads it first")
	}
	return f, err
}
