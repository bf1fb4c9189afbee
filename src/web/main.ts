/**
 * The verification page (`GET /`): three tools in tabs, all verifying in this browser, a
 * fourth tab that gets an evaluation key, and `window.receiptd` for scripts (api.ts).
 * Nothing here stores anything: no cookies, no localStorage; a key typed for server
 * verification is used for that request, and an evaluation key the person chooses to use
 * here is kept in memory only (session-key.ts).
 */
import { anchorPanel } from "./anchor-panel.js";
import { type ReceiptdGlobal, receiptdGlobal } from "./api.js";
import { bundlePanel, fillServerKey } from "./bundle-panel.js";
import { byId, replace } from "./dom.js";
import { keyPanel } from "./key-panel.js";
import { receiptPanel } from "./receipt-panel.js";
import { setSessionKey } from "./session-key.js";
import { startVerifier } from "./verify-client.js";

declare global {
  interface Window {
    receiptd: ReceiptdGlobal;
  }
}

window.receiptd = receiptdGlobal();

const TABS = ["bundle", "receipt", "anchor", "key"] as const;
type Tab = (typeof TABS)[number];

function selectTab(tab: Tab, focus: boolean): void {
  for (const name of TABS) {
    const button = byId(`tab-${name}`);
    const panel = byId(`panel-${name}`);
    const selected = name === tab;
    button.setAttribute("aria-selected", String(selected));
    button.tabIndex = selected ? 0 : -1;
    panel.hidden = !selected;
    if (selected && focus) button.focus();
  }
  if (tab === "key") keys.shown();
  const hash = tab === "bundle" ? "" : `#${tab}`;
  if (location.hash !== hash) history.replaceState(null, "", `${location.pathname}${hash}`);
}

function setUpTabs(): void {
  TABS.forEach((name, index) => {
    const button = byId(`tab-${name}`);
    button.addEventListener("click", () => selectTab(name, false));
    button.addEventListener("keydown", (event) => {
      const moves: Record<string, number> = {
        ArrowRight: 1,
        ArrowLeft: -1,
        Home: -index,
        End: TABS.length - 1 - index,
      };
      const move = moves[event.key];
      if (move === undefined) return;
      event.preventDefault();
      selectTab(TABS[(index + move + TABS.length) % TABS.length]!, true);
    });
  });
  const fromHash = location.hash.slice(1);
  selectTab((TABS as readonly string[]).includes(fromHash) ? (fromHash as Tab) : "bundle", false);
}

function setUpNetworkNote(): void {
  const note = byId("network-note");
  const show = () => {
    replace(
      note,
      navigator.onLine
        ? ""
        : "Offline: verification keeps working; only the optional server checks need the network.",
    );
    note.hidden = navigator.onLine;
  };
  addEventListener("online", show);
  addEventListener("offline", show);
  show();
}

const receipts = receiptPanel(byId("panel-receipt"));
const keys = keyPanel(byId("panel-key"), {
  useKey: (key) => {
    setSessionKey(key);
    fillServerKey(key);
  },
  openBundleTab: () => selectTab("bundle", true),
});
bundlePanel(byId("panel-bundle"), {
  checkReceipt: (receipt, bundle) => {
    selectTab("receipt", true);
    receipts.load(receipt, bundle);
  },
  openKeyTab: () => selectTab("key", true),
});
anchorPanel(byId("panel-anchor"));
setUpTabs();
setUpNetworkNote();
byId("version").textContent = `receiptd ${window.receiptd.version} · ${window.receiptd.crypto}`;
document.documentElement.dataset.ready = "true";
// The verifier's worker starts now, while the page is surely online (verify-client.ts);
// `data-verifier` says when it holds its script, so the page verifies offline from then on.
void startVerifier().then((held) => {
  document.documentElement.dataset.verifier = held ? "held" : "online-only";
});
