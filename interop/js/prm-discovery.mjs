// RFC 9728 discovery as the official TypeScript MCP SDK (@modelcontextprotocol/sdk)
// does it, against a dialogtrust receiver (a dialog.Receiver, or the `dialogtrust
// proxy` ingress) that publishes protected resource metadata: the interop test of
// issue 28 runs it and checks what the SDK parsed.
//
//  1. An unauthenticated POST to the server URL, as an MCP client's first request:
//     its status and WWW-Authenticate, and what the SDK's extractWWWAuthenticateParams
//     reads from it (it reads only a Bearer challenge, and the receiver sends WPT).
//  2. discoverOAuthProtectedResourceMetadata(serverUrl): the SDK's well-known probing
//     (the path-aware URL of RFC 9728 section 3.1 first), the document parsed with
//     the SDK's schema.
//  3. The same with the URL the challenge names (resourceMetadataUrl), read out of
//     the header here, as a client that reads any scheme's resource_metadata would.
//  4. selectResourceURL(serverUrl, provider, metadata): the SDK's check that the
//     metadata's resource fits the server URL (the resource indicator it would send).
//
// Prints one line "result JSON" or "error JSON"; exits 1 on an error.
//
// Usage: node prm-discovery.mjs SERVER_URL
import {
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
  selectResourceURL,
} from "@modelcontextprotocol/sdk/client/auth.js";

const [serverUrl] = process.argv.slice(2);
if (!serverUrl) {
  console.error("usage: node prm-discovery.mjs SERVER_URL");
  process.exit(2);
}

try {
  const res = await fetch(serverUrl, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }),
  });
  await res.body?.cancel();
  const challenge = res.headers.get("WWW-Authenticate");
  const sdkParams = extractWWWAuthenticateParams(res);

  const probed = await discoverOAuthProtectedResourceMetadata(serverUrl);

  const named = /resource_metadata="([^"]+)"/.exec(challenge ?? "")?.[1] ?? null;
  const fromChallenge = named
    ? await discoverOAuthProtectedResourceMetadata(serverUrl, { resourceMetadataUrl: new URL(named) })
    : null;

  // A provider without validateResourceURL: the SDK's own check decides.
  const selected = await selectResourceURL(serverUrl, { clientMetadata: { redirect_uris: [] } }, probed);

  console.log("result " + JSON.stringify({
    status: res.status,
    challenge,
    sdkResourceMetadataUrl: sdkParams.resourceMetadataUrl?.href ?? null,
    namedResourceMetadataUrl: named,
    probed,
    fromChallenge,
    selectedResource: selected?.href ?? null,
  }));
} catch (e) {
  console.log("error " + JSON.stringify({ message: String(e?.message ?? e) }));
  process.exit(1);
}
