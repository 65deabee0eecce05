// Package profiles holds the target profiles fsctl ships: fsctl.yaml, the bundled server's and
// every command's default, and spring-article.yaml, a checkout built as the published Spring
// article describes (examples/articleshop).
package profiles

import "embed"

// Files are the shipped profiles, by file name.
//
//go:embed *.yaml
var Files embed.FS

// Bundled is the default profile's file name.
const Bundled = "fsctl.yaml"
