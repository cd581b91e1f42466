// Package doctest holds only tests: they check that the documentation (README.md,
// docs/*.md and the packages' READMEs) holds together. Every relative link must name a
// file that exists and, for a Markdown file, a heading that exists; every Go name the
// docs cite as pkg.Name or pkg.Type.Member must exist in this repository's package of
// that name, and every file they cite by its path (or a Go comment cites as a Markdown
// file) must exist, so that a removed API or file does not stay taught; every error code
// must be documented; README's first code block must be the one command a newcomer runs
// first (CI runs it verbatim); and no shell snippet may write a private key into the
// working tree. The docs walk (walk_test.go, run by .ci/docs-walk) runs README's "Try
// it" and docs/proxy.md's "Quickstart" as written in a fresh clone and compares each
// command's output with the docs' output block.
//
// Read links_test.go first (links and headings), then idents_test.go (Go names the docs
// cite), paths_test.go (file paths), codes_test.go (error codes) and walk_test.go (the
// docs walk and its convention).
package doctest
