package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The documents the docs tests read: every *.md of the repository, not in a hidden folder,
// testdata, target or node_modules, and docs/cli (generated, TestCLIReferenceIsCurrent) only when
// withCLI. By path relative to the repository's root, slash separated.
func markdownFiles(t *testing.T, root string, withCLI bool) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			skip := strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "target" ||
				d.Name() == "node_modules" || (!withCLI && rel == docsDefaultDir)
			if path != root && skip {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// proseUnit is a piece of a document read as prose: a paragraph or list item joined into one line,
// one table cell, or a shell comment in a code block; starts holds the offset in text where each
// source line begins, line the first one's number.
type proseUnit struct {
	line   int
	starts []int
	text   string
}

// lineAt is the source line of the byte at offset off.
func (u proseUnit) lineAt(off int) int {
	n := 0
	for i, s := range u.starts {
		if s <= off {
			n = i
		}
	}
	return u.line + n
}

var (
	mdListItem   = regexp.MustCompile(`^\s*(?:[-*+]|\d+\.)\s+`)
	mdHeading    = regexp.MustCompile(`^#{1,6}\s`)
	mdTableSep   = regexp.MustCompile(`^\s*\|[\s:|-]*$`)
	shellComment = regexp.MustCompile(`(?:^|\s)#\s+(.*)$`)
	shellFences  = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true}
)

// proseUnits splits a Markdown document into what is read as prose. A table's cells are units of
// their own, and a cell under a header naming exit statuses is read as a list of them ("0, 1, 3
// a threshold missed" becomes "exit statuses: 0, 1, 3 a threshold missed"). In a fenced code
// block only shell comments are read: the rest is commands and their output.
func proseUnits(doc string) []proseUnit {
	var units []proseUnit
	var para *proseUnit
	flush := func() {
		if para != nil {
			units = append(units, *para)
			para = nil
		}
	}
	var fenceMark string // the open fence's ``` or ~~~; "" outside code
	var fenceShell bool  // whether the open fence's language is the shell's
	var header []string
	for i, line := range strings.Split(doc, "\n") {
		n := i + 1
		if m := fence.FindStringSubmatch(line); m != nil && (fenceMark == "" || m[1] == fenceMark) {
			flush()
			if fenceMark == "" {
				fenceMark, fenceShell, header = m[1], shellFences[m[2]], nil
			} else {
				fenceMark = ""
			}
			continue
		}
		switch {
		case fenceMark != "":
			if c := shellComment.FindStringSubmatch(line); c != nil && fenceShell {
				units = append(units, proseUnit{line: n, starts: []int{0}, text: c[1]})
			}
		case strings.TrimSpace(line) == "" || mdHeading.MatchString(line):
			flush()
			header = nil
		case strings.HasPrefix(strings.TrimSpace(line), "|"):
			flush()
			header = tableRow(line, n, header, &units)
		default:
			header = nil
			text := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), ">"))
			if para == nil || mdListItem.MatchString(line) {
				flush()
				para = &proseUnit{line: n}
			} else {
				para.text += " "
			}
			para.starts = append(para.starts, len(para.text))
			para.text += text
		}
	}
	flush()
	return units
}

// tableRow reads one row of a table: the first row is the header (returned, and read as prose
// no more than the rest), the separator is skipped, each cell of the others becomes a unit.
func tableRow(line string, n int, header []string, units *[]proseUnit) []string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	if header == nil {
		return cells
	}
	if mdTableSep.MatchString(line) {
		return header
	}
	for i, c := range cells {
		c = strings.TrimSpace(c)
		if i < len(header) && strings.Contains(strings.ToLower(header[i]), "exit status") {
			c = "exit statuses: " + c
		}
		*units = append(*units, proseUnit{line: n, starts: []int{0}, text: c})
	}
	return header
}
