// Package fskind names what a path that should be a regular file is
// instead, for messages: "a directory", "a named pipe (FIFO)", ….
package fskind

import "io/fs"

// Of names the kind of file mode m is.
func Of(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0, t&fs.ModeDevice != 0:
		return "a device"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}
