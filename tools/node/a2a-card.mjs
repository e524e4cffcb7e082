// Reads A2A agent cards with the A2A JavaScript SDK (@a2a-js/sdk), an
// implementation independent of SwarmScore's Go code: the card a server
// serves at /.well-known/agent-card.json, fetched and parsed by the SDK's
// DefaultAgentCardResolver, and cards given whole, parsed by the SDK's
// AgentCard (A2A v1.0) reader.
//
// stdin: {"baseUrl": "http://host:port" (optional), "cards": [<card>, ...]}
// stdout: {"served": <the parsed card>|null, "cards": [<the parsed card>, ...]}
//   each parsed card as the SDK reads it, written back with its AgentCard.toJSON,
//   plus "extensions": the SDK's view of capabilities.extensions.
import {readFileSync} from 'node:fs';

import {AgentCard} from '@a2a-js/sdk';
import {DefaultAgentCardResolver} from '@a2a-js/sdk/client';

const input = JSON.parse(readFileSync(0, 'utf8'));

// view summarises a card in the SDK's typed form.
function view(parsed) {
  return {
    card: AgentCard.toJSON(parsed),
    name: parsed.name,
    interfaces: parsed.supportedInterfaces.map(i => ({url: i.url, protocolBinding: i.protocolBinding})),
    skills: parsed.skills.map(s => s.id),
    securitySchemes: Object.fromEntries(Object.entries(parsed.securitySchemes || {}).map(([k, v]) => [k, v?.scheme?.$case ?? null])),
    extensions: (parsed.capabilities?.extensions || []).map(e => ({uri: e.uri, required: e.required, params: e.params ?? null})),
  };
}

const out = {served: null, cards: []};
if(input.baseUrl) {
  const card = await new DefaultAgentCardResolver().resolve(input.baseUrl);
  // The resolver reads a v1.0 (protobuf JSON) card with AgentCard.fromJSON.
  out.served = view(card);
}
for(const c of input.cards || []) {
  out.cards.push(view(AgentCard.fromJSON(c)));
}
process.stdout.write(JSON.stringify(out) + '\n');
