package ttsservice

import (
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/tts"
)

// openDecider opens the authzen section's PDP as the TTS's IssuanceDecider (nil
// without the section): the client asks it about an authz.Issuance mapped by
// authzen.IssuanceRequest.
func openDecider(c *kit.AuthZENConfig) (tts.IssuanceDecider, error) {
	if c == nil {
		return nil, nil
	}
	cl, err := kit.OpenAuthZEN("authzen", c, nil)
	if err != nil {
		return nil, err
	}
	return cl, nil
}
