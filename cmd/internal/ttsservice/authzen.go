package ttsservice

import (
	"context"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/authzen"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/tts"
)

// openDecider opens the authzen section's PDP as the TTS's IssuanceDecider (nil
// without the section).
func openDecider(c *kit.AuthZENConfig) (tts.IssuanceDecider, error) {
	if c == nil {
		return nil, nil
	}
	cl, err := kit.OpenAuthZEN("authzen", c, nil)
	if err != nil {
		return nil, err
	}
	return issuanceDecider{cl}, nil
}

// issuanceDecider asks the PDP about a tts.Issuance, mapped by authzen.IssuanceRequest.
type issuanceDecider struct{ c *authzen.Client }

func (d issuanceDecider) DecideIssuance(ctx context.Context, in *tts.Issuance) (authz.Decision, error) {
	// The two types have the same members, so that a member added to one and not the
	// other does not compile.
	q := authzen.Issuance(*in)
	return d.c.DecideIssuance(ctx, &q)
}
