// Verifies webhook deliveries with the Standard Webhooks reference
// implementation (npm standardwebhooks), independently of the Go code that
// signed them. Reads a JSON array of {"secret","headers","body"} on stdin
// (headers: webhook-id, webhook-timestamp, webhook-signature; body: the
// exact bytes as a string) and writes a JSON array of {"ok", "error",
// "payload"}: what Webhook.verify returned or threw for each.
import { Webhook } from "standardwebhooks";

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const out = input.map(({ secret, headers, body }) => {
  try {
    // The library takes the secret with or without its whsec_ prefix.
    const payload = new Webhook(secret).verify(body, headers);
    return { ok: true, payload };
  } catch (e) {
    return { ok: false, error: String(e && e.message ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(out));
