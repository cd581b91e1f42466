package proxyservice

import (
	"fmt"

	"github.com/dialogtrust/dialogtrust/dialog"
)

// IngressResourceMetadataConfig is the protected resource metadata the ingress
// publishes at its well-known URL and names on its 401s (RFC 9728;
// dialog.WithResourceMetadata, docs/proxy.md "Protected resource metadata").
type IngressResourceMetadataConfig struct {
	// Resource is the URL clients use for the application behind the ingress (default:
	// the first of ingress.audiences that is a usable resource identifier).
	Resource string `yaml:"resource"`
	// AuthorizationServers are the issuer identifiers of the authorization servers whose
	// tokens the ingress takes: the TTS whose Txn-Tokens it validates.
	AuthorizationServers []string `yaml:"authorization_servers"`
	// ScopesSupported are the scopes a client asks for.
	ScopesSupported []string `yaml:"scopes_supported"`
	// ResourceName is a human-readable name; Documentation the URL of a page for
	// developers (resource_documentation).
	ResourceName  string `yaml:"resource_name"`
	Documentation string `yaml:"documentation"`
}

// ingressMetadata is the metadata of ingress.resource_metadata with its defaults, nil
// without the section; an error names the member at fault.
func ingressMetadata(in *IngressConfig) (*dialog.ResourceMetadata, error) {
	c := in.ResourceMetadata
	if c == nil {
		return nil, nil
	}
	if in.Boundary != nil {
		// Its callers present an access token in Authorization: Bearer, which the
		// document (bearer_methods_supported [], the WPT challenge) would deny.
		return nil, fmt.Errorf("ingress.resource_metadata: not with ingress.boundary: a boundary-facing ingress takes a Bearer access token, which this metadata does not describe yet")
	}
	md := &dialog.ResourceMetadata{Resource: c.Resource, AuthorizationServers: c.AuthorizationServers,
		ScopesSupported: c.ScopesSupported, ResourceName: c.ResourceName, ResourceDocumentation: c.Documentation}
	if md.Resource == "" {
		for _, aud := range in.Audiences {
			if _, err := dialog.ResourceMetadataURL(aud); err == nil {
				md.Resource = aud
				break
			}
		}
		if md.Resource == "" {
			return nil, fmt.Errorf("ingress.resource_metadata.resource: required, as no ingress.audiences value is an https URL usable as the resource identifier")
		}
	} else if _, err := dialog.ResourceMetadataURL(md.Resource); err != nil {
		return nil, fmt.Errorf("ingress.resource_metadata.resource: %w", err)
	}
	for i, as := range md.AuthorizationServers {
		if err := dialog.CheckResourceMetadataURL("issuer", as, true); err != nil {
			return nil, fmt.Errorf("ingress.resource_metadata.authorization_servers[%d]: %w", i, err)
		}
	}
	if md.ResourceDocumentation != "" {
		if err := dialog.CheckResourceMetadataURL("documentation", md.ResourceDocumentation, false); err != nil {
			return nil, fmt.Errorf("ingress.resource_metadata.documentation: %w", err)
		}
	}
	if err := md.Check(); err != nil {
		return nil, fmt.Errorf("ingress.resource_metadata: %w", err)
	}
	return md, nil
}
