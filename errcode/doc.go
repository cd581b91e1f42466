// Package errcode defines the one error table of dialogtrust.
//
// Read errcode.go first (Code, Kind, Error and how a cause is wrapped), then codes.go,
// the table of codes that docs/errors.md documents.
//
// Every rejection anywhere in the project is an *Error carrying a stable Code. The codes
// of the WIMSE conformance suite (cmd/dialogtrust/internal/conformance/testdata/wimsey/
// SOURCE.md, "Error codes") are used verbatim where one fits; the codes this project
// adds are listed in codes.go and in docs/errors.md.
//
// An Error also says which of two things happened (dialog-binding section 12): a check
// Failed (the credential or message is bad) or a check could not be completed
// (Incomplete: a store or key source was unreachable). Both are rejections; callers must
// never treat Incomplete as success. The two are logged apart too: LogLevel makes a
// refusal the caller caused an info line and one that could not be completed (or is
// ours) an error line.
package errcode
