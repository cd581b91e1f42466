package kit

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Expr is a CEL expression in a configuration file (package condition) with the line
// and column its text begins at, so that an error at load names them. A block scalar
// (when: |) begins on the line after its key.
type Expr struct {
	Text         string
	Line, Column int
}

// UnmarshalYAML implements go-yaml's NodeUnmarshaler: a string, plain, quoted or a
// block scalar.
func (e *Expr) UnmarshalYAML(n ast.Node) error {
	switch v := n.(type) {
	case *ast.StringNode:
		e.Text = v.Value
		pos := v.Token.Position
		e.Line, e.Column = pos.Line, pos.Column
		if v.Token.Type == token.DoubleQuoteType || v.Token.Type == token.SingleQuoteType {
			e.Column++
		}
	case *ast.LiteralNode:
		e.Text = v.Value.Value
		e.Line = v.Start.Position.Line + 1
	case *ast.NullNode:
		*e = Expr{}
	default:
		tk := n.GetToken()
		return fmt.Errorf("line %d: a CEL expression must be a string, not %s", tk.Position.Line, n.Type())
	}
	return nil
}

// FileSetter is implemented by a configuration that wants to know the file it was
// read from ("" for the embedded default), as a policy with CEL expressions does for
// its errors.
type FileSetter interface {
	SetConfigFile(file string)
}
