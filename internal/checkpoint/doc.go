// Package checkpoint is the external notarisation of the ledger (spec §8.3,
// §15.2: "write-once transaction logs with external notarization"): a
// signed commitment to every agent's hash chain head at an instant, which
// anyone may archive and later hold the operator to. It does no I/O: the
// store keeps each checkpoint and its leaves, the service signs and
// publishes them.
//
// # Construction
//
// A leaf is an agent's head (agent id, seq, chain hash), encoded without
// ambiguity (Leaf.AppendBinary). Leaves are in agent id byte order, each
// agent once. The tree is RFC 6962's Merkle Tree Hash over their encodings
// (leaf SHA-256(0x00‖leaf), node SHA-256(0x01‖left‖right), split at the
// largest power of two below n, SHA-256("") for none). A checkpoint signs
// the RFC 8785 canonical JSON of {type, checkpoint number, time, agent
// count, root, environment, issuer} with an HS256 or EdDSA key.
//
// # What a checkpoint proves
//
// Assume SHA-256 is collision resistant. Because the leaf encoding is
// injective and leaf and node hashes are domain separated, a (root, count)
// pair fixes the whole leaf list: two lists with one root and count give a
// collision. Because a chain hash is SHA-256(previous ‖ record), a leaf
// (agent, s, h) fixes that agent's records 1..s. So, once a signed
// checkpoint has been archived by someone other than the operator:
//
//   - Extends(c, leaves) = nil, where leaves are recomputed from the
//     current records of every agent c names, cut at the checkpointed
//     seq, proves that the ledger still holds every agent c named, with
//     every record it had up to that seq unchanged, in order: no chain was
//     rewritten, truncated or dropped. Records appended afterwards are not
//     covered; a later checkpoint covers them.
//   - Otherwise a *Divergence says what c alone can tell: fewer leaves
//     (agents dropped), more (agents added to the list), or the same count
//     under another root (some leaf differs: a chain rewritten or
//     truncated, or one agent swapped for another), but not which agent.
//   - Diff names the agents — dropped, truncated, rewritten, added — given
//     the leaf list the operator stored with c, after checking that list
//     against c's root and count: an altered stored list is reported as
//     such, never trusted.
//   - An inclusion proof (VerifyInclusion) shows one agent's head was in the
//     tree at c, so that an audit bundle's records 1..s can be checked
//     against the archived root without the rest of the ledger.
//
// # What it does not prove
//
//   - That the ledger was right at c.Time: the operator commits to what it
//     had. c.Time is its claim; only a copy archived elsewhere at a known
//     time fixes when the commitment existed, which is why checkpoints are
//     published.
//   - That the operator signed no other checkpoint with the same number (a
//     different history shown to different parties): only comparing
//     archived copies reveals that.
//   - That an agent has one leaf, from an inclusion proof alone: a
//     dishonest tree could hold two leaves for it. Extends over the whole
//     list does prove it, since NewTree refuses such a list.
//   - Anything, to a party that does not trust every holder of the key,
//     for an HS256 checkpoint: whoever can verify an HMAC can forge one.
//     Notarisation by outsiders wants EdDSA.
//   - More than the recomputation of the leaves is worth: a verifier that
//     recomputes chain hashes from the records relies on nothing the
//     operator stored; one that reads stored heads relies on them.
package checkpoint
