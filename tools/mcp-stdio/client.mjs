// A real stdio MCP client: the official TypeScript SDK's Client over its
// StdioClientTransport, which spawns `CROW [args...]` (e2e TestMCPStdio passes
// the crow binary and `mcp --home H`). It lists tools, resources, resource
// templates and prompts, stores a memory and searches for it, asks what changed elsewhere, reads a
// resource and gets a prompt, and prints one JSON document on stdout for the
// Go test to assert on. Usage: node client.mjs CROW_BINARY ARG... (env
// CROW_MCP_PROJECT: the project to store into and read back, default "stdio").
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const project = process.env.CROW_MCP_PROJECT || "stdio";
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "crow-stdio-test", version: "1.0.0" });
const out = {};
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.capabilities = client.getServerCapabilities();
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.prompts = (await client.listPrompts()).prompts.map((p) => ({ name: p.name, arguments: (p.arguments || []).map((a) => a.name) }));
  out.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);

  const stored = await client.callTool({
    name: "crow_store_memory",
    arguments: { content: "stdio clients reach crow through crow mcp", project, tags: ["stdio"] },
  });
  out.stored = stored.structuredContent;
  const found = await client.callTool({ name: "crow_search_memories", arguments: { query: "stdio clients", project } });
  out.search = found.structuredContent;
  const bad = await client.callTool({ name: "crow_get_memory", arguments: { id: "no-such-memory" } });
  out.tool_error = { isError: bad.isError === true, text: bad.content?.[0]?.text ?? "" };

  const changed = await client.callTool({ name: "crow_changes_since", arguments: {} });
  out.changes = changed.structuredContent;
  out.resources = (await client.listResources()).resources.map((r) => ({ uri: r.uri, mimeType: r.mimeType }));
  const inst = await client.readResource({ uri: "crow://instances" });
  out.instances = inst.contents.map((c) => ({ uri: c.uri, mimeType: c.mimeType, json: JSON.parse(c.text) }));
  const num = process.env.CROW_MCP_NUMBER;
  if (num) {
    const mem = await client.readResource({ uri: `crow://memory/${num}` });
    out.memory = mem.contents.map((c) => ({ uri: c.uri, mimeType: c.mimeType, json: JSON.parse(c.text) }));
  }
  const prompt = await client.getPrompt({ name: "consolidate_project", arguments: { project } });
  out.prompt = { description: prompt.description, messages: prompt.messages.map((m) => ({ role: m.role, text: m.content.text })) };
  try {
    await client.readResource({ uri: "crow://memory/999999" });
    out.missing = { error: "" };
  } catch (e) {
    out.missing = { error: String(e.message || e), code: e.code };
  }
} catch (e) {
  out.fatal = String(e && e.stack ? e.stack : e);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + "\n");
