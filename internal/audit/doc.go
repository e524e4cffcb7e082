// Package audit is the L3 audit of spec §7.1 ("full audit: access raw
// session and transaction logs"): a bundle that anyone can re-check
// offline with nothing but it and a key. It does no I/O: the service reads
// the store (Source) and Build assembles the bundle; Parse and Verify
// check one.
//
// # What a bundle holds
//
// The agent's passport in force at the instant audited (as_of), the
// agent's whole hash chain (every report and correction record, as the
// canonical content the chain hashes, with the stored hash and the head),
// the segments of other agents' chains that hold the reports of events
// moved to the agent (from the first such report to that agent's head),
// the latest signed checkpoint with an inclusion proof of each chain's
// head in it, the store's counts as of as_of with the score they give, and
// the exporter's account of every event the chain records: counted, or
// excluded and why (moved_to_another_agent, voided, not_final,
// status_not_counted, before_window, after_as_of), with its corrections
// and moves.
//
// # What Verify proves
//
// Assume SHA-256 is collision resistant and the keys are the operator's.
// For a bundle with nothing withheld that verifies:
//
//   - The records are the operator's chain: every link SHA-256(previous ‖
//     canonical content) is recomputed from the content, so no record of
//     the audited chain was altered, removed, added or reordered without
//     the chain ending at another head. With a checkpoint, that head (or
//     the chain's hash at the checkpoint's seq) is a leaf of the signed
//     tree: a chain rewritten consistently since the checkpoint is caught
//     too, and records appended after it are reported as not anchored.
//   - The records obey the ledger's rules: statuses move forward, a report
//     never changes its event's agent, buyer, amount, start or operator,
//     every correction applies to the event as the chain has it and does
//     what its action says (and its id is the id of what it asks).
//   - The counts follow from the records: replaying the chain, an event
//     counts exactly when it is the agent's now, not voided, VERIFIED,
//     FAILED, SETTLED, DISPUTED or REFUNDED, and ended in [as_of − 90 days,
//     as_of]; the exporter's account, counts and score must all be what
//     the replay and score.Compute give.
//   - The passport is genuine (passport.Verify), the agent's, in force at
//     as_of, and states the counts the replay gives as of its computed_at.
//     A passport issued before a later correction or late report no longer
//     does: it is reported as superseded, naming the correction.
//
// An event moved to the agent takes its end time from its report in the
// other agent's chain; that segment's links are recomputed up to its head
// and its head checked against the checkpoint like the agent's own.
//
// # Escrow holds
//
// A bundle of agent X also holds X's escrow holds as provider (issue 24;
// Bundle.Holds): every hold whose transaction X's chain reports, with all
// its steps (also those after as_of, like the chain's records), each as
// the canonical content the hold's own chain hashes (ledger.HoldContent:
// the hold's terms and price, and the state and money the step left), the
// stored hashes and head, and the documents of the passports that priced
// them (Bundle.HoldPassports). Verify checks, for each hold:
//
//   - its chain: every step's content is a hold step's as the ledger
//     writes it, every step states the same terms, the steps are numbered
//     from 1, make only the moves the ledger's actions make, leave money
//     that adds up, link (SHA-256 of the previous hash ‖ content) and end
//     at the stated head;
//   - its price: the passport it names verifies under the bundle's keys at
//     the hold's creation, is X's, and states the hold's score, tier, key
//     and escrow modifier; the modifier is the score's, and hold_cents is
//     the amount × modifier rounded up (the buyer's favour) and
//     released_cents the rest. A hold without a passport (a provider the
//     ledger did not know) must be at score 0, tier NONE: a full hold;
//   - the ledger agrees with it: X's chain reports the transaction with
//     the hold's buyer and amount, and with the status of each final step
//     (docs/ERRATA.md E56); each correction step names a correction of the
//     transaction in X's chain, dated and made as it, and does what the
//     ledger's rule (ledger.CorrectedHold) does with it; and every
//     correction of the transaction recorded since the hold was placed
//     has its step (E65).
//
// The reports' content has no escrow modifier (the chain records never
// hashed one), so the modifier is proved by the signed passport, not by
// the chain. A hold's steps are not anchored by the checkpoint: a hold
// left out of a bundle (with its passport) is not caught; a hold given is
// bound by the reports and corrections in X's chain, which are. Buyer ids,
// actors and reasons in holds follow the bundle's withholding (buyers,
// operators, reasons): a step with a withheld member has its hash taken
// as stated, and everything else above is still checked, commitments
// comparing equal to the chain's. A hold naming an erased agent by its
// pseudonym has its steps marked sealed by the erasure, whose record must
// be in the bundle, and their hashes taken as stated (docs/ERRATA.md E58);
// an erased provider's passports were revoked with their documents, so its
// holds' price is checked against their own score only. A bundle without holds has neither member, and
// reads as before; one with holds is refused whole, not verified without
// them, by a verifier that predates them (Parse refuses unknown members).
//
// # Withholding other parties' identifiers
//
// A bundle may withhold buyer ids, operators (and correction authors),
// other agents' ids and correction reasons (Bundle.Withhold): each value is
// replaced by a salted commitment, {"withheld":"<SHA-256 hex>"}, with one
// random salt per value per export, so that equal values have equal
// commitments within a bundle (the rules that compare them still run) and
// bundles cannot be linked by them. The agent's own id, event ids, types,
// statuses, times, amounts, sequence numbers and correction ids are never
// withheld: the checks read them. The chain hashes cover the identifiers
// in clear, and the hash definition cannot change (every stored chain
// must keep verifying), so a record with a withheld member cannot be
// hashed by the verifier. Verify then takes its hash as stated (reporting
// how many such records there are) and goes on. What that leaves:
//
//   - Still proved: the chain's shape and anchoring. Every record keeps its
//     position (its seq is disclosed and checked), the next complete
//     record's link checks the stated hash of the record before it (and
//     the head and checkpoint the last one's), and the checkpoint anchors
//     the chain's hash at its seq, so the records it covers cannot be
//     removed, added or reordered (by anyone, the exporter included)
//     without a discrepancy.
//     The rules, the replay, the counts, the score and the passport are
//     checked exactly as before, so a change to a withheld record that
//     alters the counts fails against the signed passport.
//   - Not proved: that what a withheld record discloses (its status,
//     times, amount, the commitments themselves) is what its hash covers,
//     nor, inside a run of consecutive withheld records, their stated
//     hashes but the last. A dishonest exporter could state another start,
//     another end time inside the window, another amount or another buyer,
//     and nothing in the bundle would show it. It binds itself, though: the
//     chain fixes the hashes, so once the values are disclosed (Open with
//     the exporter's openings, or the full bundle given to an arbiter) a
//     false statement fails the links.
//   - A withheld agent's chain segment has no checkpoint proof (the leaf
//     names the agent); the end times of events moved from it then rest on
//     the exporter's word in the same way.
//
// Withholding buyers leaves sessions without a buyer, and every
// correction, hashable; withholding operators leaves no record hashable.
// Opening the commitments (Bundle.Open, with the Openings Withhold
// returned) restores every check for the values opened.
//
// # Records sealed by an erasure
//
// An erasure (GDPR Art. 17, docs/ERRATA.md E39) renames an agent to a
// pseudonym, so the records that named it no longer hash to their stored
// hashes: they are sealed (Record.SealedBy), and the erasure's own record,
// appended to the pseudonym's chain, commits to the SHA-256 of each sealed
// content as it reads now. A bundle holding a sealed record holds that
// erasure's digests (Bundle.Sealings) and its record (in the pseudonym's
// chain, audited or added as a segment from that record): Verify checks
// that the digests are those the record commits to and that each sealed
// content is one of them, instead of its link; the records after it link
// to its stated hash as usual, and the warning sealed counts them. A
// bundle that withholds identifiers leaves the digests out (unsalted, they
// would let a guess of a withheld value be checked), and its sealed
// records' hashes are taken as stated, like withheld ones. A checkpoint
// leaf made before the erasure cannot be proved for the pseudonym: the
// chain is then reported not anchored until the next checkpoint.
//
// # What no bundle proves
//
// That the marketplace reported the truth, or reported every event: the
// ledger records what it was told. That the checkpoint was not signed
// twice with different contents (only comparing archived copies shows
// that), or anything, for HS256 checkpoints and HMAC passports, to a
// party that does not trust every holder of the key. Without a checkpoint,
// that the chain was not rewritten whole (the head is the exporter's word;
// docs/ERRATA.md E18).
package audit
