// Command dialogtrust is the command line for operators and agents: keys, WITs, WPTs,
// HTTP signatures, Txn-Tokens, handoffs, the conformance runner, the demo and the load tools.
//
// "dialogtrust help [COMMAND]" or COMMAND --help prints the help on stdout (help.go).
// Exit status: 0 on success and for help; 1 when a credential or message is rejected (stderr then
// says "error: <code>") or the command could not finish for another reason (stderr says
// why); 2 on a usage error, including a file named on the command line that cannot be
// read or written (stderr names the flag).
package main
