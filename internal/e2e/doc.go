// Package e2e holds end-to-end tests that run the specification's figures with every
// part real: the WIT issuer and the Transaction Token Service as HTTP servers on
// loopback, agents and tools as HTTP servers behind the dialog receiver, and agents
// calling through the signing agent.Transport. Nothing is minted by hand.
package e2e
