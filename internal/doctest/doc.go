// Package doctest holds only tests: they check that the documentation (README.md and
// docs/*.md) holds together. Every relative link must name a file that exists and, for
// a Markdown file, a heading that exists; README's first code block must be the one
// command a newcomer runs first (CI runs it verbatim); and no shell snippet may write a
// private key into the working tree.
package doctest
