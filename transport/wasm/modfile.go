package wasm

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxModuleSize is the largest module file, in bytes, that a Host reads
// (256 MiB). Go guests are a few MiB; the cap is there so that a path
// naming something that never ends, or a file that keeps growing, costs
// an error instead of the host's memory.
const MaxModuleSize = 256 << 20

// notModuleError is a Config.Path that cannot be a module: not a regular
// file, or larger than MaxModuleSize. Its message names the file and says
// what to do.
type notModuleError struct{ msg string }

func (e *notModuleError) Error() string { return e.msg }

// notModule is the error for a path that is not a module file at all.
func notModule(path, what string) error {
	return &notModuleError{fmt.Sprintf("%s %s: entry.wasm must name the plugin's .wasm file", path, what)}
}

// checkModuleFile refuses anything but a regular file of at most
// MaxModuleSize bytes.
func checkModuleFile(path string, fi fs.FileInfo) error {
	mode := fi.Mode()
	switch {
	case mode.IsRegular():
		if fi.Size() > MaxModuleSize {
			mib := (fi.Size() + 1<<20 - 1) >> 20 // rounded up: never "256 MiB, over the 256 MiB limit"
			return notModule(path, fmt.Sprintf("is %d MiB, over the %d MiB limit on a module", mib, MaxModuleSize>>20))
		}
		return nil
	case mode&fs.ModeNamedPipe != 0:
		return notModule(path, "is a named pipe, not a regular file")
	case mode&fs.ModeCharDevice != 0:
		return notModule(path, "is a character device, not a regular file")
	case mode&fs.ModeDevice != 0:
		return notModule(path, "is a device, not a regular file")
	case mode.IsDir():
		return notModule(path, "is a directory, not a regular file")
	case mode&fs.ModeSocket != 0:
		return notModule(path, "is a socket, not a regular file")
	}
	return notModule(path, "is not a regular file")
}

// statModule is the check before opening: a device or FIFO is refused
// without ever being opened.
func statModule(path string) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkModuleFile(path, fi); err != nil {
		return nil, err
	}
	return fi, nil
}

// openModule opens a module file for reading and checks the opened file
// again, so that a FIFO or device swapped in after statModule is caught.
// The open is non-blocking because opening a FIFO for reading otherwise
// waits for a writer, in a host thread nothing can interrupt; on the
// regular file that passes, reads block as usual.
func openModule(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkModuleFile(path, fi)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readModule reads a module through a LimitReader: a file that grows past
// MaxModuleSize after the checks is refused, not read to the end. size is
// the file's size when opened: the buffer is made that large at once
// (plus room to see the end), rather than grown and copied from 512 bytes.
func readModule(path string, r io.Reader, size int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(max(size, 0), MaxModuleSize)+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(r, MaxModuleSize+1))
	if err != nil {
		return nil, err
	}
	bin := buf.Bytes()
	if len(bin) > MaxModuleSize {
		return nil, &notModuleError{fmt.Sprintf("%s grew past the %d MiB limit on a module while being read: start the plugin again once the file is complete", path, MaxModuleSize>>20)}
	}
	return bin, nil
}
