// Package e2e holds end-to-end tests that run the specification's figures with every
// part real: the WIT issuer and the Transaction Token Service as HTTP servers on
// loopback, agents and tools as HTTP servers behind the dialog receiver, and agents
// calling through the signing agent.Transport. Nothing is minted by hand.
//
// Read harness_test.go first (the services and agents every test starts), then
// figure3_test.go (the specification's figure 3), then the handoff_*_test.go files.
package e2e
