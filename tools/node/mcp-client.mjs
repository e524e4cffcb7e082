// An MCP client built on the official TypeScript SDK
// (@modelcontextprotocol/sdk), independent of the Go SDK SwarmScore's
// server uses. It connects over stdio (spawning the server) or streamable
// HTTP, lists the tools (the SDK then validates each structured result
// against the tool's output schema), calls the tools asked for and reads
// the resources asked for.
//
// stdin: {"transport": "stdio", "command": "...", "args": [...], "env": {...}}
//     or {"transport": "http", "url": "http://.../mcp", "token": "optional bearer token"}
//   plus "calls": [{"name": "get_score", "arguments": {...}}] and "resources": ["swarmscore://formula"]
// stdout: {"server": {...}, "tools": [...], "calls": [{isError, structuredContent, text}], "resources": [...]}
import {readFileSync} from 'node:fs';

import {Client} from '@modelcontextprotocol/sdk/client/index.js';
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js';
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const input = JSON.parse(readFileSync(0, 'utf8'));
let transport;
if(input.transport === 'stdio') {
  transport = new StdioClientTransport({command: input.command, args: input.args || [], env: input.env, stderr: 'inherit'});
} else {
  const headers = input.token ? {Authorization: `Bearer ${input.token}`} : {};
  transport = new StreamableHTTPClientTransport(new URL(input.url), {requestInit: {headers}});
}
const client = new Client({name: 'swarmscore-interop', version: '1.0.0'});
await client.connect(transport);
const out = {server: client.getServerVersion(), protocolVersion: transport.protocolVersion ?? null, tools: [], calls: [], resources: []};
const {tools} = await client.listTools();
out.tools = tools.map(t => ({name: t.name, inputSchema: t.inputSchema, outputSchema: t.outputSchema ?? null}));
for(const call of input.calls || []) {
  try {
    const r = await client.callTool({name: call.name, arguments: call.arguments});
    out.calls.push({isError: r.isError === true, structuredContent: r.structuredContent ?? null,
      text: (r.content || []).filter(c => c.type === 'text').map(c => c.text).join('')});
  } catch(e) {
    out.calls.push({protocolError: String(e.message || e)});
  }
}
const {resources} = await client.listResources();
out.listedResources = resources.map(r => r.uri);
for(const uri of input.resources || []) {
  const r = await client.readResource({uri});
  out.resources.push(...r.contents.map(c => ({uri: c.uri, mimeType: c.mimeType, text: c.text})));
}
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
