package main

import (
	"fmt"
	"os"

	"github.com/fsctl/fsctl/blast"
)

// writeRequestFiles writes the per-request files blast was asked for: vegeta results (--results)
// and the full records that fsctl blast merge reads (--records).
func writeRequestFiles(o blastOptions, p blast.Plan, res *blast.Result, limits map[blast.Target]blast.ItemLimit) error {
	if o.results != "" {
		if err := writeFile(o.results, func(f *os.File) error { return blast.WriteResults(f, res.Records) }); err != nil {
			return err
		}
	}
	if o.records != "" {
		h := blast.HeaderOf(p, res, limits)
		if err := writeFile(o.records, func(f *os.File) error { return blast.WriteRecords(f, h, res.Records) }); err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates path and fills it with write, reporting the first error of either.
func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
