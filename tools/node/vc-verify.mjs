// Verifies SwarmScore's W3C Verifiable Credentials with Digital Bazaar's
// libraries, an implementation independent of the Go code that issues them.
//
// stdin: {"credentials": [<credential>, ...], "documents": {"<url>": <document>}}
//   documents holds what the issuer serves (its DID document at its did:web
//   id, status list credentials at their URLs); JSON-LD contexts come from
//   testdata/contexts only. Nothing is fetched from a network.
// stdout: one result per credential, in order:
//   {"verified": bool, "errors": [messages], "revoked": bool|null}
//   revoked is the credential's Bitstring Status List entry (null without
//   status), checked only when the proof verified.
import {readFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

import * as vc from '@digitalbazaar/vc';
import {DataIntegrityProof} from '@digitalbazaar/data-integrity';
import {createVerifyCryptosuite} from '@digitalbazaar/eddsa-jcs-2022-cryptosuite';
import {checkStatus} from '@digitalbazaar/vc-bitstring-status-list';

const here = dirname(fileURLToPath(import.meta.url));
const contexts = {
  'https://www.w3.org/ns/credentials/v2': 'credentials-v2.jsonld',
  'https://www.w3.org/ns/did/v1': 'did-v1.jsonld',
  'https://w3id.org/security/multikey/v1': 'multikey-v1.jsonld',
  'https://w3id.org/security/data-integrity/v2': 'data-integrity-v2.jsonld',
};

const input = JSON.parse(readFileSync(0, 'utf8'));
const held = new Map();
for(const [url, file] of Object.entries(contexts)) {
  held.set(url, JSON.parse(readFileSync(join(here, 'testdata', 'contexts', file), 'utf8')));
}
for(const [url, doc] of Object.entries(input.documents || {})) {
  held.set(url, doc);
}

// The offline loader: a held document, or a verification method of a held
// DID document (the DID URL with its fragment), with the DID document's
// @context, as a DID resolver dereferences it.
async function documentLoader(url) {
  if(held.has(url)) {
    return {contextUrl: null, documentUrl: url, document: held.get(url)};
  }
  const [did, fragment] = url.split('#');
  if(fragment !== undefined && held.has(did)) {
    const doc = held.get(did);
    const vm = (doc.verificationMethod || []).find(m => m.id === url);
    if(vm) {
      return {contextUrl: null, documentUrl: url, document: {'@context': doc['@context'], ...vm}};
    }
  }
  throw new Error(`offline document loader: ${url} is not held`);
}

const suite = new DataIntegrityProof({cryptosuite: createVerifyCryptosuite()});

function messages(err) {
  const out = [];
  const walk = e => {
    if(!e) {
      return;
    }
    if(Array.isArray(e)) {
      e.forEach(walk);
      return;
    }
    out.push(String(e.message || e));
    walk(e.errors);
    walk(e.cause);
  };
  walk(err);
  return out;
}

const results = [];
for(const credential of input.credentials) {
  const r = await vc.verifyCredential({credential, suite, documentLoader, checkStatus});
  const errors = messages(r.error);
  for(const p of r.results || []) {
    if(!p.verified) {
      errors.push(...messages(p.error));
    }
  }
  let revoked = null;
  if(r.statusResult) {
    if(!r.statusResult.verified) {
      errors.push(...messages(r.statusResult.error));
      for(const s of r.statusResult.results || []) {
        errors.push(...messages(s.error));
      }
    } else {
      revoked = r.statusResult.results.some(s => s.status === true);
    }
  }
  results.push({verified: r.verified === true, errors, revoked});
}
process.stdout.write(JSON.stringify(results) + '\n');
