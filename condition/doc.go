// Package condition is the one CEL machinery of dialogtrust: every place an operator
// writes a condition (the TTS's and the identity-chaining servers' issuance policy, a
// receiver's allow rule) declares its typed variables here, compiles each expression
// once at load and evaluates it per request under a bound.
//
// Read env.go first (Env, Var, the types and the limits), then compile.go (Compile,
// Source, CompileError: what a configuration error says), eval.go (Program, the
// evaluation and its error codes) and input.go (Input: one request's evaluations).
//
// The expressions are Common Expression Language (github.com/google/cel-go, the last
// version under that module path), with the standard library, optional values
// (claims.?dept.orValue("")), and the strings, sets and lists extensions.
//
// Why it is built this way:
//
//   - Type-checked at load. An expression is checked against the variables of its place
//     and against the type its result must have (bool for a condition, list(string) for
//     narrowed scopes, a map or string for a computed member); a typo in a variable or
//     field name, or a result of the wrong type, stops the configuration from loading,
//     and the error names the file, the line, the field and the expression. A result of
//     type dyn (a claim) is accepted at load and checked when evaluated.
//   - Bounded. Every evaluation is held to CEL's cost limit (WithCostLimit) and, when
//     the expression loops (a comprehension: all, exists, map, filter), to an
//     evaluation deadline (WithDeadline) that CEL checks inside the loop. The limit is
//     kept at load where it can be (estimate.go): CEL's static estimate of the worst
//     case over the sizes a place declares for its variables (Var.Within), within the
//     limit, lets the expression run without the runtime tracker; one CEL cannot bound
//     so keeps the tracker and is stopped at the limit. An expression without a loop
//     cannot outrun its cost, so it only looks at the caller's context.
//   - Cheap per request. A request's expressions share one Input (input.go): its
//     variables adapted once (a struct variable read through its pointer, a JSON
//     object decoded on first read: LazyObject), one execution frame and one deadline,
//     whose timer is shared by the requests of the same millisecond (deadline.go).
//   - Fail closed. An evaluation that ends in an error (a missing map key, a value of
//     the wrong type) is an *errcode.Error with code condition_error (failed); one that
//     the cost limit or the deadline stopped is condition_not_evaluated (could not be
//     completed). Either way the caller refuses: a rule that cannot be evaluated never
//     allows anything.
//
// The package imports only errcode and cel-go, so any layer above may use it.
package condition
