package kit

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// ConfigError is a check's refusal of a configuration, located where the value came
// from: the file (or the embedded default), line and column of the member it is about,
// with the source line and a caret as the YAML parser's errors show them; or the
// environment variable or flag that set it. A program's checks name the member by its
// YAML path at the start of the message ("egress.routes[0].upstream: ..."), and
// Source.Locate finds it; this is the one place that renders it.
type ConfigError struct {
	// Where is the file, "embedded default", or "environment variable NAME" / "flag
	// --name".
	Where string
	// Path is the member's YAML path as the message names it.
	Path string
	// Line and Column are the position in Where (0 when it is not a file).
	Line, Column int
	// Err is the check's error.
	Err  error
	text string
}

func (e *ConfigError) Error() string { return e.text }
func (e *ConfigError) Unwrap() error { return e.Err }

// memberPath is the YAML path that starts a check's message: names joined by dots,
// each maybe followed by [index] (or [key], as in wits[a.example], read up to the
// member it names).
var memberPath = regexp.MustCompile(`^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*|\[[^\]\s]*\])*`)

// Locate returns err (a check's refusal of the configuration read from s) as a
// *ConfigError when it starts with the path of a member that the environment or a
// flag set, or that is in the file or the nearest member above it is; else err as it
// is. nil stays nil.
func (s Source) Locate(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*ConfigError](err); ok {
		return err
	}
	msg := err.Error()
	path := memberPath.FindString(msg)
	if path == "" || (len(path) < len(msg) && msg[len(path)] != ':' && msg[len(path)] != ' ') {
		return err
	}
	if by := s.setBy(path); by != "" {
		return &ConfigError{Where: by, Path: path, Err: err, text: by + ": " + msg}
	}
	tk := s.find(path)
	if tk == nil {
		return err
	}
	where := s.File
	if s.Embedded {
		where = "embedded default"
	}
	return &ConfigError{Where: where, Path: path, Line: tk.Position.Line, Column: tk.Position.Column, Err: err,
		text: where + ": " + yaml.FormatErrorWithToken(msg, tk, false, true)}
}

// setBy names the environment variable or flag that set the member at path or one
// that holds it (a list set whole), the flag when both did (it won); "" when neither.
func (s Source) setBy(path string) string {
	by := ""
	for _, o := range s.overrides {
		if path == o.member || strings.HasPrefix(path, o.member+".") || strings.HasPrefix(path, o.member+"[") {
			by = o.by
		}
	}
	return by
}

// find is the token of the member at path in the source: its value when it is a
// scalar, else its key; or, when the member is not there (a required one left out),
// the key of the nearest member above it. nil when not even the first member is there.
func (s Source) find(path string) *token.Token {
	if len(s.raw) == 0 {
		return nil
	}
	f, err := parser.ParseBytes(s.raw, 0)
	if err != nil || len(f.Docs) == 0 {
		return nil
	}
	node := f.Docs[0].Body
	var found *token.Token
	for _, seg := range splitPath(path) {
		var key *token.Token
		node, key = child(node, seg)
		if node == nil {
			break
		}
		found = key
		if found == nil {
			found = node.GetToken()
		}
	}
	if node != nil {
		switch node.(type) {
		case *ast.MappingNode, *ast.SequenceNode, *ast.MappingValueNode:
		default:
			found = node.GetToken()
		}
	}
	return found
}

// splitPath splits egress.routes[0].upstream into egress, routes, [0], upstream, and
// chaining.peers[https://b.example].rsa into chaining, peers, [https://b.example], rsa.
func splitPath(path string) []string {
	var segs []string
	for path != "" {
		switch {
		case path[0] == '.':
			path = path[1:]
		case path[0] == '[':
			j := strings.IndexByte(path, ']')
			if j < 0 {
				return segs
			}
			segs = append(segs, path[:j+1])
			path = path[j+1:]
		default:
			j := strings.IndexAny(path, ".[")
			if j < 0 {
				j = len(path)
			}
			segs = append(segs, path[:j])
			path = path[j:]
		}
	}
	return segs
}

// child is the member seg ("name" or "[index]") of node, and the token of its key (nil
// for a list item); nil when there is none.
func child(node ast.Node, seg string) (ast.Node, *token.Token) {
	if strings.HasPrefix(seg, "[") {
		seq, ok := node.(*ast.SequenceNode)
		if !ok {
			return nil, nil
		}
		key := strings.TrimSuffix(strings.TrimPrefix(seg, "["), "]")
		if i, err := strconv.Atoi(key); err == nil {
			if i < 0 || i >= len(seq.Values) {
				return nil, nil
			}
			return seq.Values[i], nil
		}
		// A list named by an item's key (wits[a.example], chaining.peers[ISSUER]): the
		// first item with a member of that value.
		for _, item := range seq.Values {
			if m, ok := item.(*ast.MappingNode); ok {
				for _, mv := range m.Values {
					if v, ok := mv.Value.(*ast.StringNode); ok && v.Value == key {
						return item, nil
					}
				}
			}
		}
		return nil, nil
	}
	var values []*ast.MappingValueNode
	switch n := node.(type) {
	case *ast.MappingNode:
		values = n.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{n}
	}
	for _, mv := range values {
		if k, ok := mv.Key.(*ast.StringNode); ok && k.Value == seg {
			return mv.Value, mv.Key.GetToken()
		}
	}
	return nil, nil
}
