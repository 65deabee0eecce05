package yamlfield

import "os"

// Load reads the file at path and hands its bytes to parse. A file that cannot be read (missing,
// a folder, no permission) is os.ReadFile's error, which names the path; whatever parse refuses
// is an *Error naming the file once, so the caller can tell "could not read" from "read but
// wrong" with errors.As and nothing else.
func Load[T any](path string, parse func([]byte) (T, error)) (T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(b)
	if err != nil {
		return v, inFile(path, err)
	}
	return v, nil
}

// inFile is err, a mistake in the file at path, as an *Error naming the file: an *Error of its
// own gains the file, any other error becomes one.
func inFile(path string, err error) *Error {
	if fe, ok := err.(*Error); ok { // only a bare one: a wrapped one would print the file mid-sentence
		out := *fe
		if out.File == "" {
			out.File = path
		}
		return &out
	}
	return &Error{File: path, Err: err}
}
