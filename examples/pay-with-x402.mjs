#!/usr/bin/env node
/**
 * Pays for one verification with x402 instead of an API key, using the official client SDK
 * (@x402/fetch + @x402/evm): the wrapped fetch receives the 402 challenge, signs an EIP-3009
 * authorization for the offered amount, and sends the request again with PAYMENT-SIGNATURE.
 *
 *   node examples/pay-with-x402.mjs <URL> <BUNDLE.json>
 *
 * The payer is PAYER_PRIVATE_KEY (0x + 64 hex digits), or a throwaway key made for this run,
 * which is all the local facilitator stand-in (`npm run dev:facilitator`) needs: it checks
 * signatures, not balances. Against a real facilitator the payer needs the asset on the network
 * the service offers. Prints the verdict and the settlement transaction; exits 0 when paid
 * and answered 200, else 1.
 *
 * The SDK packages are devDependencies of a checkout. Beside an installed package (which ships
 * this file as node_modules/receiptd/examples/pay-with-x402.mjs), install them first:
 * `npm install @x402/fetch @x402/evm` (viem comes with receiptd).
 */
import { readFile } from "node:fs/promises";
import { ExactEvmScheme } from "@x402/evm";
import { decodePaymentResponseHeader, wrapFetchWithPaymentFromConfig } from "@x402/fetch";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

const [url, bundlePath] = process.argv.slice(2);
if (url === undefined || bundlePath === undefined) {
  process.stderr.write("usage: node examples/pay-with-x402.mjs <URL> <BUNDLE.json>\n");
  process.exit(2);
}

const account = privateKeyToAccount(process.env.PAYER_PRIVATE_KEY || generatePrivateKey());
const fetchWithPayment = wrapFetchWithPaymentFromConfig(fetch, {
  schemes: [{ network: "eip155:*", client: new ExactEvmScheme(account) }],
});

const response = await fetchWithPayment(url, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: await readFile(bundlePath),
});
const answer = await response.json();
const settlement = response.headers.get("payment-response");
const paid = settlement === null ? null : decodePaymentResponseHeader(settlement);
process.stdout.write(
  `${JSON.stringify(
    {
      status: response.status,
      verdict: answer.verdict ?? null,
      error: answer.error ?? null,
      payer: account.address,
      transaction: paid?.transaction ?? null,
      network: paid?.network ?? null,
    },
    null,
    2,
  )}\n`,
);
process.exitCode = response.status === 200 && paid?.success === true ? 0 : 1;
