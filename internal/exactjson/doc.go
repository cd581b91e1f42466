// Package exactjson makes JSON member names match struct fields exactly.
//
// Everything is in exactjson.go.
//
// encoding/json matches an object member to a struct field case-insensitively when no
// name matches exactly: it reads {"AUD": ...} as the claim aud. JWT claim names are
// case-sensitive (RFC 7519 section 4), and so are the members of every JSON document
// this project reads, so CheckNames refuses a member whose name is not one of the
// struct's but equals one of them under case folding. A member that matches no field
// in any case is still ignored, as before. The check follows the Go type into nested
// structs, pointers, slices, arrays and map values; a type with its own UnmarshalJSON
// or UnmarshalText (json.RawMessage, jose.NumericDate) decodes itself and is not
// entered, nor is an interface value (maps match names exactly).
//
// A member named twice in one object is refused (DuplicateError) where it decodes
// into something, a struct field or a map entry: encoding/json keeps the last copy and
// another parser may keep the first, so two readers could see two claims sets (RFC 7519
// section 4 lets a parser reject duplicate claim names; RFC 8259 section 4 leaves the
// behaviour open). Callers map it, like a NameError, to their invalid-encoding code.
//
// One mechanism for every decode site: Unmarshal for json.Unmarshal, CheckNames after
// a json.Decoder.
package exactjson
