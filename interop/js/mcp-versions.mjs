// What protocol versions the pinned TypeScript MCP SDK (@modelcontextprotocol/sdk)
// speaks, for the interop test that shows whether it speaks MCP 2026-07-28 yet
// (TestMCP20260728_TypeScriptSDK1322StopsAt20251125). Prints one line of JSON:
// {"latest": LATEST_PROTOCOL_VERSION, "supported": SUPPORTED_PROTOCOL_VERSIONS,
// "version": the package's version}. With a URL, its Streamable HTTP client then
// connects there and calls the tool "probe" once, so that the test sees what the
// client sends (the handshake, the version field, Mcp-Method and Mcp-Name or none).
//
// Usage: node mcp-versions.mjs [URL]
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";

const pkg = JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"));
console.log(JSON.stringify({ latest: LATEST_PROTOCOL_VERSION, supported: SUPPORTED_PROTOCOL_VERSIONS, version: pkg.version }));

const [url] = process.argv.slice(2);
if (url) {
  const client = new Client({ name: "versions-probe", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await client.callTool({ name: "probe", arguments: {} });
  await client.close();
}
