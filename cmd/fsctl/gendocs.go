package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// The CLI reference in docs/cli is generated from the command tree by the hidden `fsctl docs-gen`
// (`make docs`) with cobra's doc package: a Markdown page per command, named as GenMarkdownTree names
// them (fsctl.md the root, fsctl_sale_create.md), and a README.md index; TestCLIReferenceIsCurrent
// fails when the checked-in files are not what it makes.
//
// It must read the same on every machine: flag defaults taken from the environment (FSCTL_REDIS_URL,
// FSCTL_JWT_SECRET, ...) would put one machine's addresses or a secret into the reference, so the
// tree is built afresh with every FSCTL_* variable unset (docsEnvPrefix) and cobra's dated footer
// off. The help never shows the machine's own paths either (stack --dir shows ./.stack).
const docsDefaultDir = "docs/cli"

// docsEnvPrefix names the variables that are unset while the reference is generated.
const docsEnvPrefix = "FSCTL_"

// newDocsGenCmd is `fsctl docs-gen --dir DIR`, hidden: it is the Makefile's, not an operator's.
func newDocsGenCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "docs-gen",
		Short:  "Write the CLI reference (docs/cli) from the command tree (run by make docs)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			files, err := writeCLIReference(dir)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %d files to %s\n", len(files), dir)
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", docsDefaultDir, "folder to write the reference into; its *.md files are replaced")
	return cmd
}

// writeCLIReference replaces the *.md files of dir with the reference and returns their names.
func writeCLIReference(dir string) ([]string, error) {
	files, err := cliReference()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return nil, err
	}
	for _, f := range old {
		if _, keep := files[filepath.Base(f)]; !keep {
			if err := os.Remove(f); err != nil {
				return nil, err
			}
		}
	}
	names := make([]string, 0, len(files))
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// cliReference is the reference, file name to contents, generated from a tree built without the
// environment's FSCTL_* variables.
func cliReference() (map[string][]byte, error) {
	restore := unsetEnv(docsEnvPrefix)
	root := newRootCmd()
	restore()
	files := map[string][]byte{"README.md": cliIndex(root)}
	var err error
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		var b bytes.Buffer
		if e := doc.GenMarkdownCustom(c, &b, func(link string) string { return link }); e != nil && err == nil {
			err = e
		}
		files[docsFile(c)] = b.Bytes()
		for _, sub := range availableSubs(c) {
			walk(sub)
		}
	}
	walk(root)
	return files, err
}

// cliIndex is docs/cli/README.md: every command, in tree order, with its one-line summary.
func cliIndex(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString("# fsctl command reference\n\n")
	b.WriteString("Generated from the command tree by `make docs`; do not edit by hand (a test fails when it is\n")
	b.WriteString("not current). One page per command; [fsctl.md](fsctl.md) is the root. Flag defaults are shown as\n")
	b.WriteString("they are with no FSCTL_* variable set: the variable a flag reads is named in its description.\n\n")
	var walk func(c *cobra.Command, depth int)
	walk = func(c *cobra.Command, depth int) {
		fmt.Fprintf(&b, "%s- [%s](%s) — %s\n", strings.Repeat("  ", depth), c.CommandPath(), docsFile(c), c.Short)
		for _, sub := range availableSubs(c) {
			walk(sub, depth+1)
		}
	}
	walk(root, 0)
	return b.Bytes()
}

// docsFile is a command's page, cobra's name for it: fsctl_sale_create.md.
func docsFile(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// availableSubs is c's subcommands that get a page (not hidden, help or deprecated), by name.
func availableSubs(c *cobra.Command) []*cobra.Command {
	var subs []*cobra.Command
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			subs = append(subs, sub)
		}
	}
	slices.SortFunc(subs, func(a, b *cobra.Command) int { return strings.Compare(a.Name(), b.Name()) })
	return subs
}

// unsetEnv unsets every environment variable whose name starts with prefix and returns what
// puts them back.
func unsetEnv(prefix string) (restore func()) {
	saved := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, prefix) {
			saved[k] = v
			_ = os.Unsetenv(k)
		}
	}
	return func() {
		for k, v := range saved {
			_ = os.Setenv(k, v)
		}
	}
}
