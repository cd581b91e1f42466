package main

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/adaptertest"
)

// The example runs to its end over loopback and prints every step it verified, in
// order, and its SDK's answer.
func TestTwoDomainsExampleRuns(t *testing.T) {
	adaptertest.RunsInOrder(t, run, append(adaptertest.TwoDomainsSteps, "the agent's answer: booked in Lisbon", "done: every step passed")...)
}

// An offer whose grant names another credential than the access token that travels
// with it is refused by the hotel's receiver before any work: the example fails with a
// stable code.
func TestTwoDomainsExampleRefusesAnotherGrant(t *testing.T) {
	adaptertest.RefusesAnotherGrant(t, run, &bindGrant)
}
