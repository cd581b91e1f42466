package kit

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Expr is a string member of a configuration that keeps where its value was written,
// so that what is compiled from it (a CEL condition) can name the file, the line and
// the column in its error. Line and Column are where the text begins (1-based): for a
// block scalar (allow: |) the line after its key, column unknown (0).
type Expr struct {
	Text         string
	Line, Column int
}

// UnmarshalYAML takes a scalar and its position.
func (e *Expr) UnmarshalYAML(n ast.Node) error {
	switch v := n.(type) {
	case *ast.StringNode:
		e.Text = v.Value
		e.Line, e.Column = v.Token.Position.Line, v.Token.Position.Column
		if t := v.Token.Type; t == token.DoubleQuoteType || t == token.SingleQuoteType {
			e.Column++ // the text starts after the quote
		}
	case *ast.LiteralNode:
		e.Text = v.Value.Value
		e.Line, e.Column = v.Start.Position.Line+1, 0
	case *ast.NullNode:
		*e = Expr{Line: v.Token.Position.Line}
	default:
		return fmt.Errorf("line %d: an expression is a string, not %s", n.GetToken().Position.Line, n.Type())
	}
	return nil
}

// SourceSetter is a configuration that keeps the Source it was read from (Load calls
// SetSource), so that its checks can name the file with a line (Expr).
type SourceSetter interface {
	SetSource(Source)
}
